package v1alpha1

// SignalOperationProgress is the signal a volume's child workflow sends
// its backup at each step, so the backup's status shows where the
// operation is.
const SignalOperationProgress = "operation-progress"

// OperationProgress is the payload of SignalOperationProgress.
type OperationProgress struct {
	ID       string         `json:"id"`
	Phase    OperationPhase `json:"phase"`
	Progress string         `json:"progress"`
	// SnapshotReady: the volume's snapshot is ready (its data may still
	// be moving); the post hooks of the pods that mount it may run.
	SnapshotReady bool `json:"snapshotReady,omitempty"`
}
