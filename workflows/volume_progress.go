package workflows

// SignalOperationProgress is the signal a volume's child workflow sends
// its backup at each step, so the backup's status shows where the
// operation is.
const SignalOperationProgress = "operation-progress"

// OperationProgress is the payload of SignalOperationProgress.
type OperationProgress struct {
	ID       string         `json:"id"`
	Phase    OperationPhase `json:"phase"`
	Progress string         `json:"progress"`
}
