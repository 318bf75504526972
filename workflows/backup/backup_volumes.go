package backup

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// versionPodVolumes marks the runs that plan pod volumes' copies.
const versionPodVolumes = "pod-volumes"

// planVolumes asks which claims to snapshot and which pod volumes to
// copy from their nodes. It runs as soon as the plan is made, beside
// collection, so a cluster without the snapshot API fails the backup
// without waiting for collection to end. A backup that snapshots
// nothing still copies the pod volumes asked for; backups started
// before pod volumes existed plan nothing then.
func (b *backupRun) planVolumes(ctx workflow.Context) error {
	podVolumes := b.version(ctx, versionPodVolumes, 1) == 1
	if !b.spec.SnapshotsVolumes() && !podVolumes {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(10*time.Minute))
	var res v1alpha1.PlanVolumesResult
	in := v1alpha1.PlanVolumesInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, ActingAs: b.opts.ActingAs}
	if err := workflow.ExecuteActivity(actx, csiActs.PlanVolumes, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("plan volumes: %w", err)
	}
	b.status.Warnings += res.Warnings
	timeout := b.spec.SnapshotTimeout()
	kind := v1alpha1.OperationKindCSISnapshot
	if b.spec.SnapshotMoveData {
		kind = v1alpha1.OperationKindDataUpload
	}
	for _, v := range res.Volumes {
		b.status.Operations = append(b.status.Operations, v1alpha1.Operation{
			ID: v1alpha1.VolumeOperationID(v), Kind: kind, Volume: v, Phase: v1alpha1.OperationNew,
			Timeout: timeout, WorkflowID: v1alpha1.VolumeWorkflowID(b.spec.Name, v),
		})
	}
	for _, v := range res.PodVolumes {
		b.status.Operations = append(b.status.Operations, v1alpha1.Operation{
			ID: v1alpha1.VolumeOperationID(v), Kind: v1alpha1.OperationKindPodVolumeBackup, Volume: v, Phase: v1alpha1.OperationNew,
			Timeout: b.spec.DataTimeout(), WorkflowID: v1alpha1.VolumeWorkflowID(b.spec.Name, v),
		})
	}
	if len(res.Volumes)+len(res.PodVolumes) > 0 {
		b.logger.Info("Planned volumes", "snapshots", len(res.Volumes), "podVolumes", len(res.PodVolumes), "skipped", res.Warnings)
	}
	moves := len(res.PodVolumes) > 0 || (b.spec.SnapshotMoveData && len(res.Volumes) > 0)
	if moves && !b.dryRun {
		return b.ensureRepository(ctx)
	}
	return nil
}

// ensureRepositoryAttempts bounds the tries of a repository whose storage
// fails, as a volume's data move is bounded: what does not open after
// these would fail every volume after it.
const ensureRepositoryAttempts = 5

// ensureRepository creates the location's kopia repository, if it has
// none, before any data mover starts: data movers only connect. It also
// fails the backup early on a wrong repository password, or on storage
// that still fails after a few tries.
func (b *backupRun) ensureRepository(ctx workflow.Context) error {
	opts := b.activityOptions(10 * time.Minute)
	opts.RetryPolicy.MaximumAttempts = ensureRepositoryAttempts
	actx := workflow.WithActivityOptions(ctx, opts)
	in := v1alpha1.EnsureRepositoryInput{Backup: b.spec.Name, Location: b.spec.StorageLocation}
	if err := workflow.ExecuteActivity(actx, repositoryActs.EnsureRepository, in).Get(ctx, nil); err != nil {
		return fmt.Errorf("volume data repository: %w", err)
	}
	return nil
}

// runOperations runs one child workflow per volume, at most
// VolumeConcurrency at once, and the operations extensions started,
// while the backup waits in WaitingForOperations. An operation that
// fails or times out makes the backup PartiallyFailed; a canceled backup
// cancels its operations and waits for them to clean up.
//
// Pods with hooks run their pre hooks before the first of their volumes
// is snapshotted, and their post hooks once the last one's snapshot is
// ready (before its data moves). A volume of a pod whose pre hook failed
// with onError Fail is not snapshotted: its operation fails.
func (b *backupRun) runOperations(ctx workflow.Context) error {
	if len(b.status.Operations) == 0 && !b.hasHooks() && b.extensionOperations == 0 {
		return nil
	}
	b.setPhase(ctx, v1alpha1.PhaseWaitingForOperations)
	extensionOps := b.startExtensionOperations(ctx)
	b.listenForProgress(ctx)
	b.hooksWithoutVolumes(ctx)

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
		why := b.beforeSnapshot(ctx, op.Volume)
		if ctx.Err() != nil {
			break
		}
		if why != "" {
			b.skipOperation(ctx, op, why)
			continue
		}
		req := v1alpha1.VolumeSnapshotRequest{
			Backup: b.spec.Name, Location: b.spec.StorageLocation, OperationID: op.ID, Volume: op.Volume,
			Timeout: op.Timeout, NativeSnapshots: b.spec.NativeSnapshots, HeartbeatTimeout: b.opts.HeartbeatTimeout.Duration,
		}
		child := v1alpha1.VolumeSnapshotWorkflowName
		if b.spec.SnapshotMoveData || op.Kind == v1alpha1.OperationKindPodVolumeBackup {
			req.MoveData, req.PrepareTimeout, req.DataTimeout = true, b.spec.PrepareTimeout(), b.spec.DataTimeout()
		}
		if op.Kind == v1alpha1.OperationKindPodVolumeBackup {
			child = v1alpha1.PodVolumeBackupWorkflowName
			op.Volume.PodVolume.Consistency = b.consistency(op.Volume)
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:          op.WorkflowID,
			WaitForCancellation: true,
			// A backup that is terminated still asks its operations to
			// clean up.
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		now := workflow.Now(ctx).UTC()
		op.Phase, op.Started, op.Updated = v1alpha1.OperationInProgress, &now, &now
		b.updateDetails(ctx)
		f := workflow.ExecuteChildWorkflow(cctx, child, req)
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			var res v1alpha1.VolumeSnapshotResult
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
	if extensionOps != nil {
		return b.recordExtensionOperations(ctx, extensionOps)
	}
	return nil
}

// skipOperation fails an operation that is not started: a pre hook of a
// pod that mounts its volume failed (why).
func (b *backupRun) skipOperation(ctx workflow.Context, op *v1alpha1.Operation, why string) {
	now := workflow.Now(ctx).UTC()
	op.Updated = &now
	op.Phase, op.Error = v1alpha1.OperationFailed, "not snapshotted: "+why
	b.status.Errors++
	b.logger.Warn("Volume not snapshotted", "operation", op.ID, "reason", why)
	b.snapshotTaken(ctx, op.Volume)
	b.updateDetails(ctx)
}

// listenForProgress applies the children's progress signals to the
// operations, for the status query and the Temporal UI.
func (b *backupRun) listenForProgress(ctx workflow.Context) {
	flow.OnProgress(ctx, func(gctx workflow.Context, p v1alpha1.OperationProgress) {
		for i := range b.status.Operations {
			op := &b.status.Operations[i]
			if op.ID == p.ID && !op.Phase.Done() {
				now := workflow.Now(gctx).UTC()
				op.Progress, op.Updated = p.Progress, &now
				if p.SnapshotReady {
					b.snapshotTaken(gctx, op.Volume)
				}
			}
		}
		b.updateDetails(gctx)
	})
}

func (b *backupRun) recordOperation(ctx workflow.Context, op *v1alpha1.Operation, res v1alpha1.VolumeSnapshotResult, err error) {
	now := workflow.Now(ctx).UTC()
	op.Updated = &now
	op.Phase, op.Error = flow.ChildOutcome(ctx, err, res.Phase, res.Error)
	b.snapshotTaken(ctx, op.Volume)
	if err == nil {
		op.Snapshot, op.Upload = res.Snapshot, res.Upload
	}
	switch op.Phase {
	case v1alpha1.OperationCompleted:
		op.Progress = "ready"
		if op.Upload != nil {
			op.Progress = "data moved"
		}
	case v1alpha1.OperationFailed:
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
		if op.Phase == v1alpha1.OperationFailed {
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
func (b *backupRun) completedOperations() []v1alpha1.Operation {
	var done []v1alpha1.Operation
	for _, op := range b.status.Operations {
		if op.Phase == v1alpha1.OperationCompleted && op.Snapshot != nil && !op.Snapshot.Deleted {
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
	in := v1alpha1.CollectSnapshotsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Operations: ops}
	var res v1alpha1.CollectSnapshotsResult
	if err := workflow.ExecuteActivity(actx, csiActs.CollectVolumeSnapshots, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("collect volume snapshots: %w", err)
	}
	b.addItems(res.Resources)
	return nil
}

// operationCounts is "2 Completed, 1 InProgress" in phase order.
func operationCounts(ops []v1alpha1.Operation) string {
	return flow.PhaseCounts(len(ops), func(i int) v1alpha1.OperationPhase { return ops[i].Phase })
}

// discardSnapshots deletes the snapshots a failed or canceled backup had
// already kept: without the backup, nothing would ever restore or delete
// them.
func (b *backupRun) discardSnapshots(ctx workflow.Context) {
	if len(b.completedOperations()) == 0 {
		return
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := v1alpha1.DeleteSnapshotsInput{Backup: b.spec.Name, Location: b.spec.StorageLocation}
	if err := workflow.ExecuteActivity(actx, csiActs.DeleteBackupSnapshots, in).Get(ctx, nil); err != nil {
		b.logger.Warn("Deleting the snapshots of the failed backup failed", "error", err)
	}
}
