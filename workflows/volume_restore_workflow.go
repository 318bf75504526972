package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// VolumeRestoreWorkflow restores one claim's data from the kopia
// repository: wait for a data mover slot, expose a new volume shaped
// like the backed-up claim, let a data mover write the snapshot into it
// (a fresh one per attempt; a retry skips the files already written),
// then hand the volume over: it is kept (Retain), freed of its temporary
// claim and pre-bound to the target claim, which the restore creates
// next with spec.volumeName set. Anything cut short is cleaned up.
func VolumeRestoreWorkflow(ctx workflow.Context, req VolumeRestoreRequest) (*VolumeRestoreResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "restore", req.Restore, "volume", req.Volume.Key())
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindVolumeRestore),
		SearchAttrName.ValueSet(req.Restore), SearchAttrPhase.ValueSet(string(OperationInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	heartbeat := req.HeartbeatTimeout
	if heartbeat <= 0 {
		heartbeat = defaultHeartbeatTimeout
	}
	report := func(ctx workflow.Context, phase OperationPhase, progress string) {
		reportProgress(ctx, logger, req.Volume.ID, phase, progress)
	}
	m := &dataMove{
		operationID: req.Volume.ID, prepareTimeout: req.PrepareTimeout, dataTimeout: req.DataTimeout, heartbeat: heartbeat,
		what: "the data of kopia snapshot " + req.Volume.SnapshotID, logger: logger, report: report,
	}
	target := req.Volume.Target()
	in := ExposeInput{
		Owner: req.Restore, Location: req.Location, Mode: ExposeRestore, Volume: target,
		SnapshotSize: req.Volume.SizeBytes, AccessModes: req.Volume.AccessModes,
		TaskQueue: DataMoverTaskQueue(restoreOwner(req.Restore), target),
	}
	var written DataDownloadInfo
	task := moverTask{activity: RestoreVolumeDataActivity, result: &written, input: RestoreVolumeDataInput{
		Restore: req.Restore, Location: req.Location, SnapshotID: req.Volume.SnapshotID, Volume: req.Volume.Key(),
		OperationID: req.Volume.ID, RestoreWorkflowID: parentID(ctx),
	}}
	var handed HandOverResult
	handOver := func(ctx workflow.Context) error {
		report(ctx, OperationInProgress, "data written; handing the volume over to claim "+req.Volume.Key())
		actx := workflow.WithActivityOptions(ctx, activityOptions(10*time.Minute, heartbeat))
		if err := workflow.ExecuteActivity(actx, HandOverVolumeActivity, in).Get(ctx, &handed); err != nil {
			return fmt.Errorf("hand the volume over to claim %s: %w", req.Volume.Key(), err)
		}
		return nil
	}
	exposed, attempts, err := m.run(ctx, in, task, handOver)

	dctx, _ := workflow.NewDisconnectedContext(ctx)
	out := &VolumeRestoreResult{Phase: OperationCompleted}
	switch {
	case err != nil && (temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled)):
		out.Phase, out.Error = OperationCanceled, "canceled by request"
	case err != nil:
		out.Phase, out.Error = OperationFailed, reason(err)
		logger.Warn("Volume restore failed", "reason", out.Error)
	default:
		out.PersistentVolume = handed.PersistentVolume
		written.Attempts, written.DataMover, written.Node = attempts, exposed.DataMover, exposed.Node
		out.Download = &written
		logger.Info("Volume data restored", "persistentVolume", out.PersistentVolume, "bytes", written.Bytes,
			"skippedBytes", written.SkippedBytes, "attempts", attempts)
	}
	publishPhase(dctx, logger, Phase(out.Phase))
	if out.Phase == OperationCanceled {
		return out, temporal.NewCanceledError("volume restore canceled")
	}
	return out, nil
}

// reportProgress tells the parent (a backup or a restore) where the
// operation id is. A parent that has ended no longer listens; that is
// not the operation's problem.
func reportProgress(ctx workflow.Context, logger log.Logger, id string, phase OperationPhase, progress string) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	p := OperationProgress{ID: id, Phase: phase, Progress: progress}
	if err := workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, SignalOperationProgress, p).Get(ctx, nil); err != nil {
		logger.Debug("Progress not delivered", "error", err)
	}
}
