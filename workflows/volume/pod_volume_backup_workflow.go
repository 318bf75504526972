package volume

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// PodVolumeBackupWorkflow is one async operation of a backup: copy one
// volume of a running pod into the location's kopia repository, read by
// a data mover on the pod's node from the pod's volume directory, with
// the same slots, attempts, checkpoints, timeouts and cancellation as a
// snapshot's data. The copy is taken from the live volume: it is crash
// consistent unless the pod's hooks quiesce it, which the backup runs
// around this operation.
func PodVolumeBackupWorkflow(ctx workflow.Context, req v1alpha1.VolumeSnapshotRequest) (*v1alpha1.VolumeSnapshotResult, error) {
	v := &volumeRun{req: req, logger: log.With(workflow.GetLogger(ctx), "backup", req.Backup, "volume", req.Volume.Key())}
	if req.Volume.PodVolume == nil {
		return nil, temporal.NewNonRetryableApplicationError("not a pod volume: "+req.Volume.Key(), v1alpha1.ErrTypeInvalidSpec, nil)
	}
	return v.operation(ctx, "pod volume backup", v.copyPodVolume)
}

// copyPodVolume runs the data movers until the volume is copied, the
// attempts or the time run out, or the backup is canceled.
func (v *volumeRun) copyPodVolume(ctx workflow.Context) *v1alpha1.VolumeSnapshotResult {
	pv := v.req.Volume.PodVolume
	in := v1alpha1.ExposeInput{
		Owner: v.req.Backup, Location: v.req.Location, Mode: v1alpha1.ExposeFSBackup, Volume: v.req.Volume,
		TaskQueue: v1alpha1.DataMoverTaskQueue(v.req.Backup, v.req.Volume),
	}
	m := &dataMove{
		operationID: v.req.OperationID, prepareTimeout: v.req.PrepareTimeout, dataTimeout: v.req.DataTimeout,
		heartbeat: v.heartbeat(), what: fmt.Sprintf("volume %s of pod %s/%s", pv.Volume, v.req.Volume.Namespace, pv.Pod),
		logger: v.logger, report: v.report,
	}
	var up v1alpha1.DataUploadInfo
	task := moverTask{activity: datamoverActs.UploadVolume, result: &up, input: v1alpha1.UploadVolumeInput{
		Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume, OperationID: v.req.OperationID,
	}}
	exposed, attempts, err := m.run(ctx, in, task, nil)
	if err != nil {
		res := &v1alpha1.VolumeSnapshotResult{Phase: v1alpha1.OperationFailed, Error: "copy from the pod: " + flow.Reason(err)}
		if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
			res.Phase, res.Error = v1alpha1.OperationCanceled, "canceled by request"
		}
		v.logger.Warn("Pod volume backup did not complete", "phase", res.Phase, "reason", res.Error)
		return res
	}
	up.Attempts, up.DataMover, up.Node = attempts, exposed.DataMover, exposed.Node
	v.logger.Info("Pod volume copied", "kopiaSnapshot", up.SnapshotID, "bytes", up.Bytes, "files", up.Files, "attempts", attempts)
	return &v1alpha1.VolumeSnapshotResult{Phase: v1alpha1.OperationCompleted, Upload: &up}
}
