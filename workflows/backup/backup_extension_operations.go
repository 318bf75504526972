package backup

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// extensionOperationsStep bounds the step that waits for every operation
// extensions started: each is bounded by the item operation timeout, and
// a worker's death is found out by the heartbeat, so this is only a
// backstop.
const extensionOperationsStep = 7 * 24 * time.Hour

// startExtensionOperations starts the step that runs the operations
// extensions started during collection (one activity however many there
// are: each runs as a workflow of its own), or returns nil when they
// started none.
func (b *backupRun) startExtensionOperations(ctx workflow.Context) workflow.Future {
	if b.extensionOperations == 0 {
		return nil
	}
	b.logger.Info("Waiting for extension operations", "operations", b.extensionOperations)
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(extensionOperationsStep))
	in := v1alpha1.RunOperationsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Options: b.opts,
		Timeout: b.spec.OperationTimeout()}
	return workflow.ExecuteActivity(actx, clusterActs.RunOperations, in)
}

// recordExtensionOperations waits for the step and records how the
// operations ended: each that failed or was canceled is an error of the
// backup.
func (b *backupRun) recordExtensionOperations(ctx workflow.Context, f workflow.Future) error {
	var res v1alpha1.RunOperationsResult
	if err := f.Get(ctx, &res); err != nil {
		return fmt.Errorf("extension operations: %w", err)
	}
	counts := res.Operations
	b.status.ExtensionOperations = &counts
	b.status.Errors += counts.Failed + counts.Canceled
	b.status.Warnings += res.Warnings
	b.extensionOperationsError = res.FirstError
	if counts.Failed+counts.Canceled > 0 {
		b.logger.Warn("Extension operations failed", "failed", counts.Failed, "canceled", counts.Canceled, "first", res.FirstError)
	}
	b.updateDetails(ctx)
	return nil
}

// cancelExtensionOperations cancels the operations of a backup that ended
// early; the step that waits for them cancels them too when it is
// canceled, but it may not run to see it.
func (b *backupRun) cancelExtensionOperations(ctx workflow.Context) {
	if b.extensionOperations == 0 {
		return
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(10*time.Minute))
	in := v1alpha1.CancelOperationsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation}
	if err := workflow.ExecuteActivity(actx, clusterActs.CancelOperations, in).Get(ctx, nil); err != nil {
		b.logger.Warn("Canceling the extension operations failed", "error", err)
	}
}

// extensionOperationsFailure summarizes the operations that did not
// complete for a PartiallyFailed backup's reason; "" when all did.
func (b *backupRun) extensionOperationsFailure() string {
	return b.status.ExtensionOperations.Unfinished(b.extensionOperationsError)
}
