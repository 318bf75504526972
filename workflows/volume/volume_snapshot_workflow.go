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

// VolumeSnapshotWorkflow is one async operation of a backup: cut a CSI
// snapshot of one claim's volume, wait until it is ready (bounded by the
// request's timeout, cancellable), and record its handle and sizes. A
// snapshot that does not become ready, or whose backup is canceled, is
// deleted again, so nothing is left behind in the cluster or the driver.
func VolumeSnapshotWorkflow(ctx workflow.Context, req v1alpha1.VolumeSnapshotRequest) (*v1alpha1.VolumeSnapshotResult, error) {
	v := &volumeRun{req: req, name: v1alpha1.SnapshotName(req.Backup, req.Volume),
		logger: log.With(workflow.GetLogger(ctx), "backup", req.Backup, "volume", req.Volume.Key())}
	return v.operation(ctx, "volume snapshot", v.run)
}

// operation runs body as one volume operation of a backup (what names
// it): searchable as the backup's, its phase published when it ends, a
// canceled one ending canceled.
func (v *volumeRun) operation(ctx workflow.Context, what string,
	body func(workflow.Context) *v1alpha1.VolumeSnapshotResult) (*v1alpha1.VolumeSnapshotResult, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindVolumeSnapshot),
		v1alpha1.SearchAttrName.ValueSet(v.req.Backup), v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.OperationInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	res := body(ctx)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	flow.PublishPhase(dctx, v.logger, v1alpha1.Phase(res.Phase))
	if res.Phase == v1alpha1.OperationCanceled {
		return res, temporal.NewCanceledError(what + " canceled")
	}
	return res, nil
}

type volumeRun struct {
	req    v1alpha1.VolumeSnapshotRequest
	name   string
	logger log.Logger
	ready  bool // the snapshot is ready: reports say so
}

func (v *volumeRun) run(ctx workflow.Context) *v1alpha1.VolumeSnapshotResult {
	hb := v.heartbeat()
	v.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("creating VolumeSnapshot %s", v.name))
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(10*time.Minute, hb))
	var created v1alpha1.CreateSnapshotResult
	err := workflow.ExecuteActivity(actx, csiActs.CreateVolumeSnapshot, v1alpha1.CreateSnapshotInput{
		Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume, NativeSnapshots: v.req.NativeSnapshots,
	}).Get(ctx, &created)
	if err != nil {
		return v.fail(ctx, err, "create VolumeSnapshot")
	}
	v.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("waiting for VolumeSnapshot %s to be ready", created.Name))

	// The timeout spans every attempt: a worker that dies while waiting
	// does not restart the clock.
	wopts := flow.ActivityOptions(v.req.Timeout, hb)
	wopts.ScheduleToCloseTimeout = v.req.Timeout
	wctx := workflow.WithActivityOptions(ctx, wopts)
	var info v1alpha1.SnapshotInfo
	err = workflow.ExecuteActivity(wctx, csiActs.WaitVolumeSnapshot, v1alpha1.WaitSnapshotInput{
		Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume, Name: created.Name,
	}).Get(ctx, &info)
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return v.failWith(ctx, err, v.notReady(timeoutErr))
	}
	if err != nil {
		return v.fail(ctx, err, "wait for VolumeSnapshot "+created.Name)
	}
	info.Pruned = created.Pruned
	v.logger.Info("Volume snapshot ready", "snapshot", info.Name, "content", info.Content, "handle", info.Handle,
		"restoreBytes", info.RestoreBytes)
	if !v.req.MoveData {
		return &v1alpha1.VolumeSnapshotResult{Phase: v1alpha1.OperationCompleted, Snapshot: &info}
	}
	// Reported before the data moves, so the backup runs its pods' post
	// hooks then.
	v.ready = true
	v.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("VolumeSnapshot %s ready; moving its data", created.Name))

	up, err := v.moveData(ctx, &info)
	if err != nil {
		return v.fail(ctx, err, "move the data of VolumeSnapshot "+created.Name)
	}
	v.logger.Info("Volume data moved", "kopiaSnapshot", up.SnapshotID, "bytes", up.Bytes, "uploadedBytes", up.UploadedBytes,
		"attempts", up.Attempts)
	if v.req.NativeSnapshots == v1alpha1.NativeSnapshotsDelete {
		v.report(ctx, v1alpha1.OperationInProgress, "data moved; deleting native snapshot "+v.name)
		if err := v.removeSnapshot(ctx); err != nil {
			v.logger.Warn("Deleting the native snapshot failed; it stays until the backup is deleted", "error", err)
		} else {
			info.Deleted = true
		}
	}
	return &v1alpha1.VolumeSnapshotResult{Phase: v1alpha1.OperationCompleted, Snapshot: &info, Upload: up}
}

// notReady says that the snapshot's wait ran out of csiSnapshotTimeout,
// with what the wait saw last.
func (v *volumeRun) notReady(timeoutErr *temporal.TimeoutError) string {
	msg := fmt.Sprintf("VolumeSnapshot %s was not ready within csiSnapshotTimeout %s; canceled", v.name, v.req.Timeout)
	var last string
	if timeoutErr.HasLastHeartbeatDetails() && timeoutErr.LastHeartbeatDetails(&last) == nil && last != "" {
		msg += " (last seen: " + last + ")"
	}
	return msg
}

// fail ends the operation because step failed with err.
func (v *volumeRun) fail(ctx workflow.Context, err error, step string) *v1alpha1.VolumeSnapshotResult {
	return v.failWith(ctx, err, step+": "+flow.Reason(err))
}

// failWith removes the snapshot (on a disconnected context: a canceled
// operation cleans up too) and ends the operation with why, or as
// canceled.
func (v *volumeRun) failWith(ctx workflow.Context, err error, why string) *v1alpha1.VolumeSnapshotResult {
	res := &v1alpha1.VolumeSnapshotResult{Phase: v1alpha1.OperationFailed, Error: why}
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		res.Phase, res.Error = v1alpha1.OperationCanceled, "canceled by request"
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	v.report(dctx, res.Phase, "removing VolumeSnapshot "+v.name+": "+res.Error)
	if rerr := v.removeSnapshot(dctx); rerr != nil {
		v.logger.Warn("Removing the snapshot failed", "snapshot", v.name, "error", rerr)
		res.Error += "; removing the snapshot failed: " + flow.Reason(rerr)
	}
	v.logger.Warn("Volume snapshot did not complete", "phase", res.Phase, "reason", res.Error)
	return res
}

// removeSnapshot deletes the operation's VolumeSnapshot and waits until
// the driver's snapshot is gone.
func (v *volumeRun) removeSnapshot(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(10*time.Minute, v.heartbeat()))
	in := v1alpha1.RemoveSnapshotInput{Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume, Name: v.name}
	return workflow.ExecuteActivity(actx, csiActs.RemoveVolumeSnapshot, in).Get(ctx, nil)
}

// report tells the parent backup where this operation is.
func (v *volumeRun) report(ctx workflow.Context, phase v1alpha1.OperationPhase, progress string) {
	reportProgress(ctx, v.logger, v1alpha1.OperationProgress{ID: v.req.OperationID, Phase: phase, Progress: progress,
		SnapshotReady: v.ready})
}
