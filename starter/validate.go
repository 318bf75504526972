package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// checkResourceFilters asks a worker, through a short validation workflow,
// which resource filter entries the cluster does not serve. If no worker
// answers within ValidationTimeout the check is skipped: the request is
// still accepted (durably queued) and the backup's plan rejects a typo.
func (c *Client) checkResourceFilters(ctx context.Context, spec v1alpha1.BackupSpec) error {
	patterns := append(append([]string{}, spec.IncludedResources...), spec.ExcludedResources...)
	if len(patterns) == 0 {
		return nil
	}
	opts := client.StartWorkflowOptions{
		ID:                       fmt.Sprintf("validate/backup/%s/%d", spec.Name, time.Now().UnixNano()),
		TaskQueue:                v1alpha1.TaskQueue,
		WorkflowExecutionTimeout: c.opts.ValidationTimeout,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, v1alpha1.ValidateFiltersWorkflowName, patterns)
	if err != nil {
		return fmt.Errorf("check resource filters: %w", err)
	}
	var unknown []string
	if err := run.Get(ctx, &unknown); err != nil {
		// No worker answered in time, or it could not reach the cluster:
		// the backup's plan checks the same thing once it runs.
		return ctx.Err()
	}
	if len(unknown) > 0 {
		return &InvalidError{Problems: []string{fmt.Sprintf("unknown resources %v: the cluster serves no such type (use resource or resource.group names, as `kubectl api-resources` lists them)", unknown)}}
	}
	return nil
}
