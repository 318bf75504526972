package v1alpha1

// RepositoryMaintenanceWorkflowName runs kopia maintenance on a location's
// repository; MaintenanceScheduleID is its schedule. One schedule per
// namespace, skipping a run while the last goes on, makes one maintainer
// per repository.
const (
	RepositoryMaintenanceWorkflowName = "RepositoryMaintenance"
	MaintenanceScheduleID             = "cairn-repository-maintenance"
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
