package deletion

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// DeleteBackupWorkflow deletes a backup's objects in its location,
// backup.json first so a half-deleted backup is never listed as complete.
// Deleting what is already gone succeeds, so it is safe to run again and
// resumes wherever a killed worker left it.
func DeleteBackupWorkflow(ctx workflow.Context, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "backup", req.Backup)
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindDeletion), v1alpha1.SearchAttrName.ValueSet(req.Backup), v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseInProgress)),
	); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	opts := flow.ActivityOptions(time.Hour, workflows.HeartbeatTimeout(ctx))
	// A location that keeps refusing gives up after a day, with its
	// error, instead of holding up the expiry run that started it.
	opts.ScheduleToCloseTimeout = 24 * time.Hour
	actx := workflow.WithActivityOptions(ctx, opts)
	// An immutable backup is refused before anything of it goes. Its
	// error goes out as it is, for its type: it names the backup.
	if err := workflow.ExecuteActivity(actx, storeActs.CheckBackupDeletable, req).Get(ctx, nil); err != nil {
		flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
		return nil, err
	}
	if (req.Kind == "" || req.Kind == v1alpha1.KindBackup) && workflow.GetVersion(ctx, "delete-actions", workflow.DefaultVersion, 1) == 1 {
		// Extensions delete what they made for the items first: one that
		// cannot keeps the whole backup, nothing of it deleted.
		var acted v1alpha1.DeleteActionsResult
		in := v1alpha1.DeleteActionsInput{Backup: req.Backup, Location: req.Location, Deletion: workflow.GetInfo(ctx).WorkflowExecution.RunID}
		if err := workflow.ExecuteActivity(actx, storeActs.RunDeleteActions, in).Get(ctx, &acted); err != nil {
			flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
			return nil, fmt.Errorf("delete actions of backup %s: %w", req.Backup, err)
		}
		if acted.Calls > 0 {
			logger.Info("Extensions deleted for the backup's items", "items", acted.Items, "calls", acted.Calls)
		}
	}
	if req.Kind == "" || req.Kind == v1alpha1.KindBackup {
		// The native snapshots go first: once backup.json is gone, nothing
		// would tell a later run that they belonged to this backup.
		var snaps v1alpha1.DeleteSnapshotsResult
		in := v1alpha1.DeleteSnapshotsInput{Backup: req.Backup, Location: req.Location}
		if err := workflow.ExecuteActivity(actx, csiActs.DeleteBackupSnapshots, in).Get(ctx, &snaps); err != nil {
			flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
			return nil, fmt.Errorf("delete the snapshots of backup %s: %w", req.Backup, err)
		}
		if snaps.Deleted > 0 {
			logger.Info("Backup's native snapshots deleted", "snapshots", snaps.Deleted)
		}
	}
	if req.Kind == "" || req.Kind == v1alpha1.KindBackup {
		// Before the backup's files: volumes.json says whether any data
		// was moved.
		var data v1alpha1.DeleteVolumeDataResult
		in := v1alpha1.DeleteVolumeDataInput{Backup: req.Backup, Location: req.Location}
		if err := workflow.ExecuteActivity(actx, repositoryActs.DeleteVolumeData, in).Get(ctx, &data); err != nil {
			flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
			return nil, fmt.Errorf("delete the volume data of backup %s: %w", req.Backup, err)
		}
		if data.Snapshots > 0 {
			logger.Info("Backup's volume data deleted", "kopiaSnapshots", data.Snapshots)
		}
	}
	var res v1alpha1.DeleteBackupResult
	if err := workflow.ExecuteActivity(actx, storeActs.DeleteBackupData, req).Get(ctx, &res); err != nil {
		flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
		return nil, fmt.Errorf("delete backup %s: %w", req.Backup, err)
	}
	flow.PublishPhase(ctx, logger, v1alpha1.PhaseCompleted)
	logger.Info("Backup deleted", "reason", req.Reason, "objects", res.ObjectsDeleted)
	return &res, nil
}

// ExpireBackupsWorkflow deletes every backup of a location whose expiry
// has passed, each through its own DeleteBackupWorkflow, then every
// expired etcd snapshot. It runs on a Temporal Schedule; a run that finds
// nothing expired does nothing. One run deletes at most a page of each
// and, after a full page, continues as new with the names after it, so
// history and payloads stay bounded however many expired.
func ExpireBackupsWorkflow(ctx workflow.Context, req v1alpha1.ExpireBackupsRequest) (*v1alpha1.ExpireBackupsResult, error) {
	if req.Limit <= 0 {
		req.Limit = v1alpha1.DefaultExpirePage
	}
	res := &v1alpha1.ExpireBackupsResult{Deleted: []string{}}
	if !req.EtcdSnapshots {
		more, err := expirePage(ctx, &req, res, storeActs.ListExpiredBackups, v1alpha1.KindBackup, "")
		if err != nil || more {
			return res, err
		}
		req.EtcdSnapshots, req.After = true, ""
	}
	if _, err := expirePage(ctx, &req, res, storeActs.ListExpiredEtcdSnapshots, v1alpha1.KindEtcdSnapshot, "etcd/"); err != nil {
		return res, err
	}
	res.DeletedTotal, res.FailedTotal = req.Deleted, req.Failed
	return res, nil
}

// expirePage deletes one page of the expired backups (or etcd snapshots)
// that list names. When there may be more, it returns the
// continue-as-new error that goes on with them.
func expirePage(ctx workflow.Context, req *v1alpha1.ExpireBackupsRequest, res *v1alpha1.ExpireBackupsResult,
	list func(context.Context, v1alpha1.ExpireBackupsRequest) ([]string, error), kind, prefix string) (more bool, err error) {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(10*time.Minute, workflows.HeartbeatTimeout(ctx)))
	var expired []string
	if err := workflow.ExecuteActivity(actx, list, *req).Get(ctx, &expired); err != nil {
		return false, fmt.Errorf("list expired %ss: %w", kind, err)
	}
	deleted, failed := flow.DeleteBackups(ctx, kind, expired, req.Location, "expired")
	for _, name := range deleted {
		res.Deleted = append(res.Deleted, prefix+name)
	}
	res.Failed = append(res.Failed, failed...)
	req.Deleted += len(deleted)
	req.Failed += len(failed)
	if len(expired) >= req.Limit {
		req.After = expired[len(expired)-1]
		return true, workflow.NewContinueAsNewError(ctx, ExpireBackupsWorkflow, *req)
	}
	return false, nil
}
