package backup

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ValidateFiltersWorkflow returns the resource filter entries the cluster
// serves no type for. The starter runs it before a backup starts, so a
// typo is rejected up front, judged by the worker's own view of the
// cluster rather than by whatever kubeconfig the caller happens to have.
func ValidateFiltersWorkflow(ctx workflow.Context, patterns []string) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var unknown []string
	err := workflow.ExecuteActivity(ctx, clusterActs.UnknownResources, patterns).Get(ctx, &unknown)
	return unknown, err
}
