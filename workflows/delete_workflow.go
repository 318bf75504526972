package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// DeleteBackupRequest asks to delete one backup's data from its location.
type DeleteBackupRequest struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	// Reason is why: "requested", "expired" or "retention".
	Reason string `json:"reason"`
	// Kind is KindBackup (when empty) or KindEtcdSnapshot.
	Kind string `json:"kind,omitempty"`
}

// DeleteBackupResult says what a deletion removed.
type DeleteBackupResult struct {
	Backup         string `json:"backup"`
	ObjectsDeleted int    `json:"objectsDeleted"`
}

// DeleteBackupWorkflow deletes a backup's objects in its location,
// backup.json first so a half-deleted backup is never listed as complete.
// Deleting what is already gone succeeds, so it is safe to run again and
// resumes wherever a killed worker left it.
func DeleteBackupWorkflow(ctx workflow.Context, req DeleteBackupRequest) (*DeleteBackupResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "backup", req.Backup)
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttrKind.ValueSet(KindDeletion), SearchAttrName.ValueSet(req.Backup), SearchAttrPhase.ValueSet(string(PhaseInProgress)),
	); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	opts := activityOptions(time.Hour, defaultHeartbeatTimeout)
	// A location that keeps refusing gives up after a day, with its
	// error, instead of holding up the expiry run that started it.
	opts.ScheduleToCloseTimeout = 24 * time.Hour
	actx := workflow.WithActivityOptions(ctx, opts)
	if req.Kind == "" || req.Kind == KindBackup {
		// The native snapshots go first: once backup.json is gone, nothing
		// would tell a later run that they belonged to this backup.
		var snaps DeleteSnapshotsResult
		in := DeleteSnapshotsInput{Backup: req.Backup, Location: req.Location}
		if err := workflow.ExecuteActivity(actx, DeleteBackupSnapshotsActivity, in).Get(ctx, &snaps); err != nil {
			publishPhase(ctx, logger, PhaseFailed)
			return nil, fmt.Errorf("delete the snapshots of backup %s: %w", req.Backup, err)
		}
		if snaps.Deleted > 0 {
			logger.Info("Backup's native snapshots deleted", "snapshots", snaps.Deleted)
		}
	}
	if req.Kind == "" || req.Kind == KindBackup {
		// Before the backup's files: volumes.json says whether any data
		// was moved.
		var data DeleteVolumeDataResult
		in := DeleteVolumeDataInput{Backup: req.Backup, Location: req.Location}
		if err := workflow.ExecuteActivity(actx, DeleteVolumeDataActivity, in).Get(ctx, &data); err != nil {
			publishPhase(ctx, logger, PhaseFailed)
			return nil, fmt.Errorf("delete the volume data of backup %s: %w", req.Backup, err)
		}
		if data.Snapshots > 0 {
			logger.Info("Backup's volume data deleted", "kopiaSnapshots", data.Snapshots)
		}
	}
	var res DeleteBackupResult
	if err := workflow.ExecuteActivity(actx, DeleteBackupDataActivity, req).Get(ctx, &res); err != nil {
		publishPhase(ctx, logger, PhaseFailed)
		return nil, fmt.Errorf("delete backup %s: %w", req.Backup, err)
	}
	publishPhase(ctx, logger, PhaseCompleted)
	logger.Info("Backup deleted", "reason", req.Reason, "objects", res.ObjectsDeleted)
	return &res, nil
}

// ExpireBackupsRequest names the location whose expired backups to delete.
type ExpireBackupsRequest struct {
	Location string `json:"location"`
}

// ExpireBackupsResult lists what one garbage-collection run deleted.
type ExpireBackupsResult struct {
	Deleted []string `json:"deleted"`
	Failed  []string `json:"failed,omitempty"`
}

// expireConcurrency bounds the deletions one collection runs at once.
const expireConcurrency = 4

// ExpireBackupsWorkflow deletes every backup of a location whose expiry
// has passed, each through its own DeleteBackupWorkflow. It runs on a
// Temporal Schedule; a run that finds nothing expired does nothing.
func ExpireBackupsWorkflow(ctx workflow.Context, req ExpireBackupsRequest) (*ExpireBackupsResult, error) {
	actx := workflow.WithActivityOptions(ctx, activityOptions(10*time.Minute, defaultHeartbeatTimeout))
	var expired []string
	if err := workflow.ExecuteActivity(actx, ListExpiredBackupsActivity, req).Get(ctx, &expired); err != nil {
		return nil, fmt.Errorf("list expired backups: %w", err)
	}
	res := &ExpireBackupsResult{}
	res.Deleted, res.Failed = deleteBackups(ctx, KindBackup, expired, req.Location, "expired")
	var etcd []string
	if err := workflow.ExecuteActivity(actx, ListExpiredEtcdActivity, req).Get(ctx, &etcd); err != nil {
		return res, fmt.Errorf("list expired etcd snapshots: %w", err)
	}
	deleted, failed := deleteBackups(ctx, KindEtcdSnapshot, etcd, req.Location, "expired")
	for _, name := range deleted {
		res.Deleted = append(res.Deleted, "etcd/"+name)
	}
	res.Failed = append(res.Failed, failed...)
	return res, nil
}

// deleteBackups deletes the named backups of location, each through its
// own DeleteBackupWorkflow child, a few at a time. It returns the names
// deleted and, for the others, why not.
func deleteBackups(ctx workflow.Context, kind string, names []string, location, reason string) (deleted, failed []string) {
	deleted = []string{}
	sel := workflow.NewSelector(ctx)
	running := 0
	for _, name := range names {
		for running >= expireConcurrency {
			sel.Select(ctx)
			running--
		}
		// One deletion per backup at a time: one already running for it
		// (started by hand) is as good as this one.
		req := DeleteBackupRequest{Backup: name, Location: location, Reason: reason}
		id := DeleteWorkflowID(name)
		if kind == KindEtcdSnapshot {
			req.Kind, id = kind, DeleteEtcdWorkflowID(name)
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: id})
		f := workflow.ExecuteChildWorkflow(cctx, DeleteBackupWorkflowName, req)
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
				failed = append(failed, name+": "+err.Error())
				return
			}
			deleted = append(deleted, name)
		})
	}
	for running > 0 {
		sel.Select(ctx)
		running--
	}
	return deleted, failed
}
