package restore

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// operationsStep bounds the step that waits for every operation
// extensions started: each is bounded by the item operation timeout, and
// a worker's death is found out by the heartbeat, so this is only a
// backstop.
const operationsStep = 7 * 24 * time.Hour

// runOperations runs the operations extensions started for the restored
// items (one step however many there are: each runs as a workflow of its
// own) while the restore waits in WaitingForOperations. A restore whose
// plan kept no extension skips it: nothing can have started one.
func (r *restoreRun) runOperations(ctx workflow.Context) error {
	if r.extensions == 0 {
		return nil
	}
	r.setPhase(ctx, v1alpha1.PhaseWaitingForOperations)
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(operationsStep))
	in := v1alpha1.RunRestoreOperationsInput{Restore: r.spec.Name, Backup: r.spec.BackupName, Location: r.spec.StorageLocation,
		Options: r.opts, Timeout: r.spec.OperationTimeout()}
	var res v1alpha1.RunRestoreOperationsResult
	if err := workflow.ExecuteActivity(actx, restoreActs.RunRestoreOperations, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("extension operations: %w", err)
	}
	if res.Operations.Total == 0 {
		return nil
	}
	counts := res.Operations
	r.status.ExtensionOperations = &counts
	r.operationsError = res.FirstError
	if counts.Failed+counts.Canceled > 0 {
		r.logger.Warn("Extension operations failed", "failed", counts.Failed, "canceled", counts.Canceled, "first", res.FirstError)
	}
	r.updateDetails(ctx)
	return nil
}

// cancelOperations cancels the operations of a restore that ended early;
// the step that waits for them cancels them too when it is canceled, but
// it may not run to see it.
func (r *restoreRun) cancelOperations(ctx workflow.Context) {
	if r.extensions == 0 {
		return
	}
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(10*time.Minute))
	in := v1alpha1.RestoreStepInput{Restore: r.spec.Name, Location: r.spec.StorageLocation, Options: r.opts}
	if err := workflow.ExecuteActivity(actx, restoreActs.CancelRestoreOperations, in).Get(ctx, nil); err != nil {
		r.logger.Warn("Canceling the extension operations failed", "error", err)
	}
}

// operationsFailure summarizes the operations that did not complete for
// a PartiallyFailed restore's reason; "" when all did.
func (r *restoreRun) operationsFailure() string {
	return r.status.ExtensionOperations.Unfinished(r.operationsError)
}
