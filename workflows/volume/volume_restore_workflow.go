package volume

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// VolumeRestoreWorkflow restores one claim's data from the kopia
// repository: wait for a data mover slot, expose a new volume shaped
// like the backed-up claim, let a data mover write the snapshot into it
// (a fresh one per attempt; a retry skips the files already written),
// then hand the volume over: it is kept (Retain), freed of its temporary
// claim and pre-bound to the target claim, which the restore creates
// next with spec.volumeName set. Anything cut short is cleaned up.
func VolumeRestoreWorkflow(ctx workflow.Context, req v1alpha1.VolumeRestoreRequest) (*v1alpha1.VolumeRestoreResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "restore", req.Restore, "volume", req.Volume.Key())
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindVolumeRestore),
		v1alpha1.SearchAttrName.ValueSet(req.Restore), v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.OperationInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	heartbeat := req.HeartbeatTimeout
	if heartbeat <= 0 {
		heartbeat = v1alpha1.DefaultHeartbeatTimeout
	}
	report := func(ctx workflow.Context, phase v1alpha1.OperationPhase, progress string) {
		reportProgress(ctx, logger, v1alpha1.OperationProgress{ID: req.Volume.ID, Phase: phase, Progress: progress})
	}
	m := &dataMove{
		operationID: req.Volume.ID, prepareTimeout: req.PrepareTimeout, dataTimeout: req.DataTimeout, heartbeat: heartbeat,
		what: "the data of kopia snapshot " + req.Volume.SnapshotID, logger: logger, report: report,
	}
	target := req.Volume.Target()
	in := v1alpha1.ExposeInput{
		Owner: req.Restore, Location: req.Location, Mode: v1alpha1.ExposeRestore, Volume: target,
		SnapshotSize: req.Volume.SizeBytes, AccessModes: req.Volume.AccessModes,
		TaskQueue: v1alpha1.DataMoverTaskQueue(v1alpha1.RestoreOwner(req.Restore), target),
	}
	var written v1alpha1.DataDownloadInfo
	task := moverTask{activity: datamoverActs.RestoreVolumeData, result: &written, input: v1alpha1.RestoreVolumeDataInput{
		Restore: req.Restore, Location: req.Location, SnapshotID: req.Volume.SnapshotID, Volume: req.Volume.Key(),
		OperationID: req.Volume.ID, Backup: req.Backup, SourceVolume: req.Volume.SourceKey(),
	}}
	var handed v1alpha1.HandOverResult
	handOver := func(ctx workflow.Context) error {
		report(ctx, v1alpha1.OperationInProgress, "data written; handing the volume over to claim "+req.Volume.Key())
		actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(10*time.Minute, heartbeat))
		if err := workflow.ExecuteActivity(actx, exposeActs.HandOverVolume, in).Get(ctx, &handed); err != nil {
			return fmt.Errorf("hand the volume over to claim %s: %w", req.Volume.Key(), err)
		}
		return nil
	}
	exposed, attempts, err := m.run(ctx, in, task, handOver)

	dctx, _ := workflow.NewDisconnectedContext(ctx)
	out := &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationCompleted}
	switch {
	case err != nil && (temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled)):
		out.Phase, out.Error = v1alpha1.OperationCanceled, "canceled by request"
	case err != nil:
		out.Phase, out.Error = v1alpha1.OperationFailed, flow.Reason(err)
		logger.Warn("Volume restore failed", "reason", out.Error)
	default:
		out.PersistentVolume = handed.PersistentVolume
		written.Attempts, written.DataMover, written.Node = attempts, exposed.DataMover, exposed.Node
		out.Download = &written
		logger.Info("Volume data restored", "persistentVolume", out.PersistentVolume, "bytes", written.Bytes,
			"skippedBytes", written.SkippedBytes, "attempts", attempts)
	}
	flow.PublishPhase(dctx, logger, v1alpha1.Phase(out.Phase))
	if out.Phase == v1alpha1.OperationCanceled {
		return out, temporal.NewCanceledError("volume restore canceled")
	}
	return out, nil
}

// reportProgress tells the parent (a backup or a restore) where
// operation p.ID is. A parent that has ended no longer listens; that is
// not the operation's problem.
func reportProgress(ctx workflow.Context, logger log.Logger, p v1alpha1.OperationProgress) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	if err := workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, v1alpha1.SignalOperationProgress, p).Get(ctx, nil); err != nil {
		logger.Debug("Progress not delivered", "error", err)
	}
}
