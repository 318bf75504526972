package deletion

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// RepositoryMaintenanceWorkflow runs one maintenance of the location's
// kopia repository.
func RepositoryMaintenanceWorkflow(ctx workflow.Context, req v1alpha1.MaintenanceRequest) (*v1alpha1.MaintenanceResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "location", req.Location)
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindMaintenance),
		v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	if req.Mode == "" {
		req.Mode = "auto"
	}
	// The activity heartbeats on a timer, so a short heartbeat timeout
	// costs nothing and a killed worker's maintenance resumes within it.
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(6*time.Hour, 2*workflows.HeartbeatTimeout(ctx)))
	var res v1alpha1.MaintenanceResult
	if err := workflow.ExecuteActivity(actx, repositoryActs.MaintainRepository, req).Get(ctx, &res); err != nil {
		flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
		return nil, fmt.Errorf("maintain the repository of %s: %w", req.Location, err)
	}
	flow.PublishPhase(ctx, logger, v1alpha1.PhaseCompleted)
	return &res, nil
}
