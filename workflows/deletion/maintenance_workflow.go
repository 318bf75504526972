package deletion

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// RepositoryMaintenanceWorkflow runs one maintenance of the location's
// kopia repository.
func RepositoryMaintenanceWorkflow(ctx workflow.Context, req workflows.MaintenanceRequest) (*workflows.MaintenanceResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "location", req.Location)
	if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SearchAttrKind.ValueSet(workflows.KindMaintenance),
		workflows.SearchAttrPhase.ValueSet(string(workflows.PhaseInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	if req.Mode == "" {
		req.Mode = "auto"
	}
	// The activity heartbeats on a timer, so a short heartbeat timeout
	// costs nothing and a killed worker's maintenance resumes within it.
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(6*time.Hour, 2*workflows.HeartbeatTimeout(ctx)))
	var res workflows.MaintenanceResult
	if err := workflow.ExecuteActivity(actx, repositoryActs.MaintainRepository, req).Get(ctx, &res); err != nil {
		flow.PublishPhase(ctx, logger, workflows.PhaseFailed)
		return nil, fmt.Errorf("maintain the repository of %s: %w", req.Location, err)
	}
	flow.PublishPhase(ctx, logger, workflows.PhaseCompleted)
	return &res, nil
}
