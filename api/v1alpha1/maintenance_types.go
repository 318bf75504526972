package v1alpha1

// MaintenanceScheduleID is the schedule of RepositoryMaintenance, which
// runs kopia maintenance on a location's repository. One schedule per
// namespace, skipping a run while the last goes on, makes one maintainer
// per repository.
const MaintenanceScheduleID = "cairn-repository-maintenance"

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
