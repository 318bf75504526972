package workflows

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// planVolumes asks which claims to snapshot. It runs right after the plan,
// so a cluster without the snapshot API fails the backup before anything
// is collected.
func (b *backupRun) planVolumes(ctx workflow.Context) error {
	if !b.spec.SnapshotsVolumes() {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(10*time.Minute))
	var res PlanVolumesResult
	in := PlanVolumesInput{Backup: b.spec.Name, Location: b.spec.StorageLocation}
	if err := workflow.ExecuteActivity(actx, PlanVolumesActivity, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("plan volumes: %w", err)
	}
	b.status.Warnings += res.Warnings
	timeout := b.spec.SnapshotTimeout()
	kind := OperationKindCSISnapshot
	if b.spec.SnapshotMoveData {
		kind = OperationKindDataUpload
	}
	for _, v := range res.Volumes {
		b.status.Operations = append(b.status.Operations, Operation{
			ID: VolumeOperationID(v), Kind: kind, Volume: v, Phase: OperationNew,
			Timeout: timeout, WorkflowID: VolumeWorkflowID(b.spec.Name, v),
		})
	}
	if len(res.Volumes) > 0 {
		b.logger.Info("Planned volume snapshots", "volumes", len(res.Volumes), "skipped", res.Warnings)
	}
	return nil
}

// runOperations runs one child workflow per volume, at most
// VolumeConcurrency at once, while the backup waits in
// WaitingForOperations. An operation that fails or times out makes the
// backup PartiallyFailed; a canceled backup cancels its operations and
// waits for them to clean up.
func (b *backupRun) runOperations(ctx workflow.Context) error {
	if len(b.status.Operations) == 0 {
		return nil
	}
	b.setPhase(ctx, PhaseWaitingForOperations)
	b.listenForProgress(ctx)

	sel := workflow.NewSelector(ctx)
	running := 0
	for i := range b.status.Operations {
		for running >= b.opts.VolumeConcurrency {
			sel.Select(ctx)
			running--
		}
		if ctx.Err() != nil {
			break
		}
		op := &b.status.Operations[i]
		req := VolumeSnapshotRequest{
			Backup: b.spec.Name, Location: b.spec.StorageLocation, OperationID: op.ID, Volume: op.Volume,
			Timeout: op.Timeout, NativeSnapshots: b.spec.NativeSnapshots, HeartbeatTimeout: b.opts.HeartbeatTimeout.Duration,
		}
		if b.spec.SnapshotMoveData {
			req.MoveData, req.PrepareTimeout, req.DataTimeout = true, b.spec.PrepareTimeout(), b.spec.DataTimeout()
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:          op.WorkflowID,
			WaitForCancellation: true,
			// A backup that is terminated still asks its operations to
			// clean up.
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		now := workflow.Now(ctx).UTC()
		op.Phase, op.Started, op.Updated = OperationInProgress, &now, &now
		b.updateDetails(ctx)
		f := workflow.ExecuteChildWorkflow(cctx, VolumeSnapshotWorkflowName, req)
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			var res VolumeSnapshotResult
			err := f.Get(ctx, &res)
			b.recordOperation(ctx, op, res, err)
		})
	}
	for running > 0 {
		sel.Select(ctx)
		running--
	}
	if ctx.Err() != nil {
		return temporal.NewCanceledError()
	}
	return nil
}

// listenForProgress applies the children's progress signals to the
// operations, for the status query and the Temporal UI.
func (b *backupRun) listenForProgress(ctx workflow.Context) {
	onProgress(ctx, func(gctx workflow.Context, p OperationProgress) {
		for i := range b.status.Operations {
			op := &b.status.Operations[i]
			if op.ID == p.ID && !op.Phase.Done() {
				now := workflow.Now(gctx).UTC()
				op.Progress, op.Updated = p.Progress, &now
			}
		}
		b.updateDetails(gctx)
	})
}

func (b *backupRun) recordOperation(ctx workflow.Context, op *Operation, res VolumeSnapshotResult, err error) {
	now := workflow.Now(ctx).UTC()
	op.Updated = &now
	op.Phase, op.Error = childOutcome(err, res.Phase, res.Error)
	if err == nil {
		op.Snapshot, op.Upload = res.Snapshot, res.Upload
	}
	switch op.Phase {
	case OperationCompleted:
		op.Progress = "ready"
		if op.Upload != nil {
			op.Progress = "data moved"
		}
	case OperationFailed:
		op.Progress = ""
		b.status.Errors++
		b.logger.Warn("Volume operation failed", "operation", op.ID, "reason", op.Error)
	}
	b.updateDetails(ctx)
}

// operationsFailure summarizes failed operations for a PartiallyFailed
// backup's reason.
func (b *backupRun) operationsFailure() string {
	var failed []string
	for _, op := range b.status.Operations {
		if op.Phase == OperationFailed {
			failed = append(failed, op.ID+": "+op.Error)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d volume operations failed: %s", len(failed), len(b.status.Operations), strings.Join(failed, "; "))
}

// completedOperations are the operations whose snapshot is ready and
// still exists.
func (b *backupRun) completedOperations() []Operation {
	var done []Operation
	for _, op := range b.status.Operations {
		if op.Phase == OperationCompleted && op.Snapshot != nil && !op.Snapshot.Deleted {
			done = append(done, op)
		}
	}
	return done
}

// collectSnapshots stores the final state of the ready snapshots and
// their contents as backup items, so a restore sees them ready.
func (b *backupRun) collectSnapshots(ctx workflow.Context) error {
	ops := b.completedOperations()
	if len(ops) == 0 {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := CollectSnapshotsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Operations: ops}
	var res CollectSnapshotsResult
	if err := workflow.ExecuteActivity(actx, CollectVolumeSnapshotsActivity, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("collect volume snapshots: %w", err)
	}
	b.addItems(res.Resources)
	return nil
}

// operationCounts is "2 Completed, 1 InProgress" in phase order.
func operationCounts(ops []Operation) string {
	return phaseCounts(len(ops), func(i int) OperationPhase { return ops[i].Phase })
}

// onProgress calls apply with every progress signal the operations
// send (for the status query and the Temporal UI), in a coroutine.
func onProgress(ctx workflow.Context, apply func(ctx workflow.Context, p OperationProgress)) {
	ch := workflow.GetSignalChannel(ctx, SignalOperationProgress)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var p OperationProgress
			if !ch.Receive(gctx, &p) {
				return
			}
			apply(gctx, p)
		}
	})
}

// childOutcome is an operation's phase and error from its child
// workflow's answer.
func childOutcome(err error, phase OperationPhase, msg string) (OperationPhase, string) {
	switch {
	case err != nil && temporal.IsCanceledError(err):
		return OperationCanceled, "canceled by request"
	case err != nil:
		return OperationFailed, reason(err)
	}
	return phase, msg
}

// phaseCounts counts the phases of n operations, in phase order.
func phaseCounts(n int, phase func(i int) OperationPhase) string {
	counts := map[OperationPhase]int{}
	for i := range n {
		counts[phase(i)]++
	}
	var parts []string
	for _, p := range []OperationPhase{OperationNew, OperationInProgress, OperationCompleted, OperationFailed, OperationCanceled} {
		if counts[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[p], p))
		}
	}
	return strings.Join(parts, ", ")
}

// discardSnapshots deletes the snapshots a failed or canceled backup had
// already kept: without the backup, nothing would ever restore or delete
// them.
func (b *backupRun) discardSnapshots(ctx workflow.Context) {
	if len(b.completedOperations()) == 0 {
		return
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := DeleteSnapshotsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation}
	if err := workflow.ExecuteActivity(actx, DeleteBackupSnapshotsActivity, in).Get(ctx, nil); err != nil {
		b.logger.Warn("Deleting the snapshots of the failed backup failed", "error", err)
	}
}
