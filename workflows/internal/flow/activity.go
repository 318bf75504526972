package flow

import (
	"errors"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// PublishPhase records a run's phase in its search attribute, for the
// Temporal UI's filters and for listing without a query.
func PublishPhase(ctx workflow.Context, logger log.Logger, p v1alpha1.Phase) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrPhase.ValueSet(string(p))); err != nil {
		logger.Warn("Upsert search attributes failed", "error", err)
	}
}

// MaxAttempts bounds the attempts of one step: with the backoff below,
// about ten minutes of an error that does not go away (a worker killed
// mid-step also costs an attempt). Then the run fails, with the last
// error, which describe shows while the step is retried.
const MaxAttempts = 25

// ActivityOptions are those of every cairn activity. On cancel, the
// workflow waits until the activity has stopped writing (to the location
// or the cluster), so what runs after it sees all it did. The typed errors
// are those no retry can fix.
func ActivityOptions(startToClose, heartbeat time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    MaxAttempts,
			NonRetryableErrorTypes: []string{v1alpha1.ErrTypeInvalidSpec, v1alpha1.ErrTypeClusterUnreachable, v1alpha1.ErrTypeLocation,
				v1alpha1.ErrTypeBackupNotFound, v1alpha1.ErrTypeBackupNotReady, v1alpha1.ErrTypeCorruptBackup, v1alpha1.ErrTypeEtcdNotConfigured,
				v1alpha1.ErrTypeSnapshotAPIMissing, v1alpha1.ErrTypeSnapshotFailed, v1alpha1.ErrTypeEncryptionKey},
		},
	}
}

// Reason turns an activity failure chain into the message a user reads.
func Reason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		// "wrapError" is the SDK's type for any wrapped Go error: it tells
		// a user nothing.
		if appErr.Type() != "" && appErr.Type() != "wrapError" {
			return appErr.Type() + ": " + appErr.Message()
		}
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return "timed out: " + timeoutErr.Error()
	}
	return err.Error()
}
