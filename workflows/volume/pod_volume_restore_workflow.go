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

// PodVolumeRestoreWorkflow writes one pod volume's file-system copy back
// into the restored pod, which waits for it in its restore-wait init
// container: wait until the pod runs that container on a node, then let
// a data mover on that node write the kopia snapshot into the pod's
// volume directory (a fresh one per attempt; a retry skips the files
// already written) and the volume's marker, which lets the pod start.
// When the data cannot come (failed, canceled), a data mover writes the
// reason into the marker instead, so the pod's init container ends with
// it rather than wait forever.
func PodVolumeRestoreWorkflow(ctx workflow.Context, req v1alpha1.VolumeRestoreRequest) (*v1alpha1.VolumeRestoreResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "restore", req.Restore, "volume", req.Volume.Key())
	if req.Volume.PodVolume == nil {
		return nil, temporal.NewNonRetryableApplicationError("not a pod volume: "+req.Volume.Key(), v1alpha1.ErrTypeInvalidSpec, nil)
	}
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
	pr := &podVolumeRestore{req: req, logger: logger, report: report, heartbeat: heartbeat}
	out, waiting, gone := pr.restore(ctx)

	// A pod that may still wait is told why its data will not come, even
	// when the restore ended before the pod was scheduled: then this
	// waits for it first, up to the prepare timeout.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if out.Phase != v1alpha1.OperationCompleted && !gone {
		if waiting == nil {
			waiting, _ = pr.await(dctx, true)
		}
		if waiting != nil {
			pr.release(dctx, *waiting, out.Error)
		}
	}
	flow.PublishPhase(dctx, logger, v1alpha1.Phase(out.Phase))
	if out.Phase == v1alpha1.OperationCanceled {
		return out, temporal.NewCanceledError("pod volume restore canceled")
	}
	return out, nil
}

// podVolumeRestore is one run of PodVolumeRestoreWorkflow.
type podVolumeRestore struct {
	req       v1alpha1.VolumeRestoreRequest
	logger    log.Logger
	report    func(ctx workflow.Context, phase v1alpha1.OperationPhase, progress string)
	heartbeat time.Duration
}

// restore waits for the pod and writes the data back. waiting is the
// volume as the pod waits for it on its node, once found: a failure
// after that is told to the pod. gone: the pod will never wait.
func (p *podVolumeRestore) restore(ctx workflow.Context) (out *v1alpha1.VolumeRestoreResult, waiting *v1alpha1.Volume, gone bool) {
	vol := p.req.Volume
	if p.req.Release != "" {
		return &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationCanceled, Error: p.req.Release}, nil, false
	}
	p.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("waiting for pod %s/%s to wait for its data", vol.Namespace, vol.PodVolume.Pod))
	target, err := p.await(ctx, false)
	if err != nil {
		return p.ended(ctx, err), nil, isPodGone(err)
	}
	pv := target.PodVolume
	m := &dataMove{
		operationID: vol.ID, prepareTimeout: p.req.PrepareTimeout, dataTimeout: p.req.DataTimeout, heartbeat: p.heartbeat,
		what: "the data of kopia snapshot " + vol.SnapshotID, logger: p.logger, report: p.report,
	}
	in := v1alpha1.ExposeInput{
		Owner: p.req.Restore, Location: p.req.Location, Mode: v1alpha1.ExposeFSRestore, Volume: *target,
		TaskQueue: v1alpha1.DataMoverTaskQueue(v1alpha1.RestoreOwner(p.req.Restore), *target),
	}
	var written v1alpha1.DataDownloadInfo
	task := moverTask{activity: datamoverActs.RestoreVolumeData, result: &written, input: v1alpha1.RestoreVolumeDataInput{
		Restore: p.req.Restore, Location: p.req.Location, SnapshotID: vol.SnapshotID, Volume: vol.Key(),
		OperationID: vol.ID, Backup: p.req.Backup, SourceVolume: vol.SourceKey(), Marker: pv.Volume, Bytes: vol.Bytes,
	}}
	exposed, attempts, err := m.run(ctx, in, task, nil)
	if isPodGone(err) {
		return p.ended(ctx, err), nil, true
	}
	if err != nil {
		return p.ended(ctx, err), target, false
	}
	written.Attempts, written.DataMover, written.Node = attempts, exposed.DataMover, exposed.Node
	p.logger.Info("Pod volume restored", "node", pv.Node, "bytes", written.Bytes, "skippedBytes", written.SkippedBytes, "attempts", attempts)
	return &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationCompleted, Download: &written}, target, false
}

// await waits until the pod runs its restore-wait init container on a
// node, and returns the volume there. ended: the restore has ended, and
// a pod that does not exist will not come.
func (p *podVolumeRestore) await(ctx workflow.Context, ended bool) (*v1alpha1.Volume, error) {
	vol := p.req.Volume
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(p.req.PrepareTimeout+5*time.Minute, p.heartbeat))
	var found v1alpha1.PodVolume
	err := workflow.ExecuteActivity(actx, exposeActs.AwaitRestoredPod, v1alpha1.AwaitRestoredPodInput{
		Restore: p.req.Restore, Location: p.req.Location, Namespace: vol.Namespace, Pod: vol.PodVolume.Pod, Volume: vol.PodVolume.Volume,
		Timeout: p.req.PrepareTimeout, Ended: ended,
	}).Get(ctx, &found)
	if err != nil {
		return nil, err
	}
	pv := *vol.PodVolume
	pv.UID, pv.Node, pv.Dir = found.UID, found.Node, found.Dir
	return &v1alpha1.Volume{Namespace: vol.Namespace, Claim: vol.Claim, PodVolume: &pv}, nil
}

// isPodGone says err is that the pod does not, and will not, wait.
func isPodGone(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == v1alpha1.ErrTypePodGone
}

// ended is the result of a restore that stopped on err.
func (p *podVolumeRestore) ended(ctx workflow.Context, err error) *v1alpha1.VolumeRestoreResult {
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		return &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationCanceled, Error: "canceled by request"}
	}
	out := &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationFailed, Error: flow.Reason(err)}
	p.logger.Warn("Pod volume restore failed", "reason", out.Error)
	return out
}

// release tells the waiting pod, through a data mover on its node
// writing the volume's marker, that its data will not come and why. It
// runs on a disconnected context: a canceled restore releases its pods.
// A release that fails is logged: the pod's init container then waits
// until the pod is deleted.
func (p *podVolumeRestore) release(ctx workflow.Context, target v1alpha1.Volume, why string) {
	p.report(ctx, v1alpha1.OperationInProgress, "telling the pod its data will not come: "+why)
	m := &dataMove{
		operationID: p.req.Volume.ID, prepareTimeout: p.req.PrepareTimeout, dataTimeout: p.req.PrepareTimeout + 5*time.Minute,
		heartbeat: p.heartbeat, what: "the release of pod " + target.Namespace + "/" + target.PodVolume.Pod, logger: p.logger, report: p.report,
	}
	in := v1alpha1.ExposeInput{
		Owner: p.req.Restore, Location: p.req.Location, Mode: v1alpha1.ExposeFSRestore, Volume: target,
		TaskQueue: v1alpha1.DataMoverTaskQueue(v1alpha1.RestoreOwner(p.req.Restore)+"/release", target),
	}
	task := moverTask{activity: datamoverActs.MarkPodVolume, input: v1alpha1.MarkPodVolumeInput{
		Restore: p.req.Restore, Location: p.req.Location, Volume: p.req.Volume.Key(), Marker: target.PodVolume.Volume,
		Content: fmt.Sprintf("restore %s: %s", p.req.Restore, why),
	}}
	if _, _, err := m.run(ctx, in, task, nil); err != nil {
		p.logger.Warn("The waiting pod was not told its data will not come", "error", err)
	}
}
