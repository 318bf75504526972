package v1alpha1

import "time"

// Phase is where a backup or restore stands.
type Phase string

const (
	PhaseNew        Phase = "New"
	PhaseInProgress Phase = "InProgress"
	PhaseFinalizing Phase = "Finalizing"
	// PhaseWaitingForOperations: the objects are collected and the
	// volume snapshots (the backup's async operations) are running.
	PhaseWaitingForOperations Phase = "WaitingForOperations"
	PhaseCompleted            Phase = "Completed"
	PhasePartiallyFailed      Phase = "PartiallyFailed"
	PhaseFailed               Phase = "Failed"
	PhaseCanceled             Phase = "Canceled"
	// PhaseDeleted is a backup whose data was deleted (by request or on
	// expiry); Temporal still remembers its run.
	PhaseDeleted Phase = "Deleted"
)

// Done reports whether the phase is final.
func (p Phase) Done() bool {
	switch p {
	case PhaseCompleted, PhasePartiallyFailed, PhaseFailed, PhaseCanceled, PhaseDeleted:
		return true
	}
	return false
}

// ResourceProgress is the state of one resource type in a backup.
type ResourceProgress struct {
	// Items collected so far (final once Done).
	Items int `json:"items"`
	// Estimate of the items the type holds, from the plan; 0 when unknown.
	Estimate int    `json:"estimate,omitempty"`
	Done     bool   `json:"done"`
	Error    string `json:"error,omitempty"`
}

// BackupStatus is what the status query returns and backup.json records.
// Its size grows with the number of resource types, never with items.
type BackupStatus struct {
	Name               string                      `json:"name"`
	Phase              Phase                       `json:"phase"`
	StartTime          *time.Time                  `json:"startTime,omitempty"`
	CompletionTime     *time.Time                  `json:"completionTime,omitempty"`
	Expiration         *time.Time                  `json:"expiration,omitempty"`
	KubernetesVersion  string                      `json:"kubernetesVersion,omitempty"`
	Namespaces         int                         `json:"namespaces"`
	ResourceTypesTotal int                         `json:"resourceTypesTotal"`
	ResourceTypesDone  int                         `json:"resourceTypesDone"`
	ItemsDone          int                         `json:"itemsDone"`
	ItemsEstimate      int                         `json:"itemsEstimate,omitempty"`
	Errors             int                         `json:"errors"`
	Warnings           int                         `json:"warnings"`
	Resources          map[string]ResourceProgress `json:"resources,omitempty"`
	Skipped            []SkippedResource           `json:"skipped,omitempty"`
	TarballBytes       int64                       `json:"tarballBytes,omitempty"`
	FailureReason      string                      `json:"failureReason,omitempty"`
	// Operations are the backup's async operations (one snapshot per
	// volume), in plan order.
	Operations []Operation `json:"operations,omitempty"`
	// ExtensionOperations counts the operations extensions started, which
	// operations.json lists one by one.
	ExtensionOperations *OperationCounts `json:"extensionOperations,omitempty"`
	// Hooks are the results of the backup's hooks, in the order they ended.
	Hooks []HookResult `json:"hooks,omitempty"`
	// Waiting are the extensions a running backup's steps wait on, read
	// from their heartbeats when the backup is described.
	Waiting []ExtensionWait `json:"waiting,omitempty"`
}

// SkippedResource is a resource type the plan left out, and why.
type SkippedResource struct {
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// CurrentPhase returns the phase; starter views use it for any run kind.
func (s BackupStatus) CurrentPhase() Phase { return s.Phase }
