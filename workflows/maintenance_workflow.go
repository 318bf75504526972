package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// RepositoryMaintenanceWorkflowName runs kopia maintenance on a location's
// repository; MaintenanceScheduleID is its schedule. One schedule per
// namespace, skipping a run while the last goes on, makes one maintainer
// per repository.
const (
	RepositoryMaintenanceWorkflowName = "RepositoryMaintenance"
	MaintenanceScheduleID             = "cairn-repository-maintenance"
	MaintainRepositoryActivity        = "MaintainRepository"
	// KindMaintenance is the maintenance workflow's CairnKind.
	KindMaintenance = "maintenance"
)

// MaintenanceRequest names the location and the kopia maintenance mode
// (auto: quick or full as their cycles fall due).
type MaintenanceRequest struct {
	Location string `json:"location"`
	Mode     string `json:"mode,omitempty"`
}

// MaintenanceResult says what ran.
type MaintenanceResult struct {
	// Ran is false when the location holds no repository yet.
	Ran  bool   `json:"ran"`
	Mode string `json:"mode"`
}

// RepositoryMaintenanceWorkflow runs one maintenance of the location's
// kopia repository.
func RepositoryMaintenanceWorkflow(ctx workflow.Context, req MaintenanceRequest) (*MaintenanceResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "location", req.Location)
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindMaintenance),
		SearchAttrPhase.ValueSet(string(PhaseInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	if req.Mode == "" {
		req.Mode = "auto"
	}
	// The activity heartbeats on a timer, so a short heartbeat timeout
	// costs nothing and a killed worker's maintenance resumes within it.
	actx := workflow.WithActivityOptions(ctx, activityOptions(6*time.Hour, time.Minute))
	var res MaintenanceResult
	if err := workflow.ExecuteActivity(actx, MaintainRepositoryActivity, req).Get(ctx, &res); err != nil {
		publishPhase(ctx, logger, PhaseFailed)
		return nil, fmt.Errorf("maintain the repository of %s: %w", req.Location, err)
	}
	publishPhase(ctx, logger, PhaseCompleted)
	return &res, nil
}
