package volume

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// moveData moves the ready snapshot's data into the location's kopia
// repository on data movers polling the operation's own task queue.
func (v *volumeRun) moveData(ctx workflow.Context, info *v1alpha1.SnapshotInfo) (*v1alpha1.DataUploadInfo, error) {
	in := v1alpha1.ExposeInput{
		Owner: v.req.Backup, Location: v.req.Location, Mode: v1alpha1.ExposeBackup, Volume: v.req.Volume,
		Snapshot: info.Name, SnapshotSize: info.RestoreBytes, TaskQueue: v1alpha1.DataMoverTaskQueue(v.req.Backup, v.req.Volume),
	}
	m := &dataMove{
		operationID: v.req.OperationID, prepareTimeout: v.req.PrepareTimeout, dataTimeout: v.req.DataTimeout,
		heartbeat: v.heartbeat(), what: "the data of snapshot " + v.name, logger: v.logger, report: v.report,
	}
	var up v1alpha1.DataUploadInfo
	task := moverTask{activity: datamoverActs.UploadVolume, result: &up, input: v1alpha1.UploadVolumeInput{
		Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume,
		OperationID: v.req.OperationID,
	}}
	exposed, attempts, err := m.run(ctx, in, task, nil)
	if err != nil {
		return nil, err
	}
	up.Attempts, up.DataMover, up.Node = attempts, exposed.DataMover, exposed.Node
	return &up, nil
}

func (v *volumeRun) heartbeat() time.Duration {
	if v.req.HeartbeatTimeout > 0 {
		return v.req.HeartbeatTimeout
	}
	return v1alpha1.DefaultHeartbeatTimeout
}
