package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// DeleteBackupData deletes a backup's objects: backup.json first, so the
// backup stops being listed as complete before anything else goes, then
// everything under its prefix. What is already gone is not an error, so
// a retry after a killed worker finishes the job. (Its log goes to the
// worker's log: the backup's own log is among what is deleted.)
func (a *Activities) DeleteBackupData(ctx context.Context, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
	log := a.Log.With(zap.String("backup", req.Backup), zap.String("reason", req.Reason))
	loc, err := a.Locations.Open(ctx, req.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	if req.Kind == v1alpha1.KindEtcdSnapshot {
		return a.deleteEtcdSnapshot(ctx, loc, req)
	}
	keys := location.Backup(req.Backup)
	committed, err := loc.Exists(ctx, keys.Metadata())
	if err != nil {
		return nil, err
	}
	if !committed {
		if velero, err := loc.Exists(ctx, keys.VeleroMetadata()); err != nil {
			return nil, err
		} else if velero {
			msg := fmt.Sprintf("backup %q was written by Velero; delete it with Velero", req.Backup)
			return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
		}
	}
	res := &v1alpha1.DeleteBackupResult{Backup: req.Backup}
	if committed {
		if err := loc.Delete(ctx, keys.Metadata()); err != nil {
			return nil, err
		}
		res.ObjectsDeleted++
	}
	if err := a.deleteAll(ctx, loc, keys.Prefix(), res); err != nil {
		return nil, err
	}
	versions, err := loc.PurgeVersions(ctx, keys.Prefix())
	if err != nil {
		return nil, err
	}
	log.Info("Deleted backup data", zap.Int("objects", res.ObjectsDeleted), zap.Int("versionsPurged", versions))
	metrics.BackupDeleted(req.Reason)
	return res, nil
}

// CheckBackupDeletable refuses, with a non-retryable Immutable error, to
// delete a backup whose object lock has not ended, before anything of it
// is touched. The store's retention of the backup's objects is the
// truth; the date backup.json records stands in where the store reports
// none. An etcd snapshot is not locked.
func (a *Activities) CheckBackupDeletable(ctx context.Context, req v1alpha1.DeleteBackupRequest) error {
	if req.Kind == v1alpha1.KindEtcdSnapshot {
		return nil
	}
	loc, err := a.Locations.Open(ctx, req.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	until, err := lockedUntil(ctx, loc, req.Backup)
	if err != nil {
		return err
	}
	if now := a.now(); now.Before(until) {
		err := &location.ImmutableError{Backup: req.Backup, Until: until}
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeImmutable, err)
	}
	return nil
}

// lockedUntil is when the last lock on a backup's objects ends: the
// latest of the store's retention of its metadata, manifest and tarball
// (a backup cut short in finalize has a locked tarball and no metadata),
// and of the date its metadata records.
func lockedUntil(ctx context.Context, loc *location.Location, backup string) (time.Time, error) {
	keys := location.Backup(backup)
	var until time.Time
	for _, key := range []string{keys.Metadata(), keys.Manifest(), keys.Resources()} {
		t, err := loc.RetainedUntil(ctx, key)
		if errors.Is(err, location.ErrNotFound) {
			continue
		}
		if err != nil {
			return time.Time{}, err
		}
		if t.After(until) {
			until = t
		}
	}
	meta, _, err := backupmeta.Read(ctx, loc, backup)
	if err == nil && meta.ImmutableUntil != nil && meta.ImmutableUntil.After(until) {
		until = *meta.ImmutableUntil
	}
	return until, nil
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// deleteEtcdSnapshot deletes an etcd snapshot, snapshot.json first.
func (a *Activities) deleteEtcdSnapshot(ctx context.Context, loc *location.Location, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
	keys := location.EtcdSnapshot(req.Backup)
	res := &v1alpha1.DeleteBackupResult{Backup: req.Backup}
	if err := loc.Delete(ctx, keys.Metadata()); err != nil {
		return nil, err
	}
	if err := a.deleteAll(ctx, loc, keys.Prefix(), res); err != nil {
		return nil, err
	}
	a.Log.Info("Deleted etcd snapshot", zap.String("etcdSnapshot", req.Backup), zap.String("reason", req.Reason))
	metrics.BackupDeleted(req.Reason)
	return res, nil
}

// deleteAll deletes every object under prefix, one at a time with the
// configured pause, heartbeating as it goes.
func (a *Activities) deleteAll(ctx context.Context, loc *location.Location, prefix string, res *v1alpha1.DeleteBackupResult) error {
	objects, err := loc.Keys(ctx, prefix)
	if err != nil {
		return err
	}
	for i, key := range objects {
		if err := loc.Delete(ctx, key); err != nil {
			return err
		}
		res.ObjectsDeleted++
		activity.RecordHeartbeat(ctx, i)
		if err := clock.Sleep(ctx, a.DeleteInterval); err != nil {
			return err
		}
	}
	return nil
}

// ListExpiredEtcdSnapshots names, in name order, the etcd snapshots of a
// location whose expiry has passed: at most req.Limit, after req.After.
func (a *Activities) ListExpiredEtcdSnapshots(ctx context.Context, req v1alpha1.ExpireBackupsRequest) ([]string, error) {
	loc, err := a.Locations.Open(ctx, req.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	snaps, err := backupmeta.EtcdSnapshots(ctx, loc, "", backupmeta.Hooks{
		Unreadable: func(name string, err error) {
			a.Log.Warn("Unreadable etcd snapshot metadata; not expiring it", zap.String("etcdSnapshot", name), zap.Error(err))
		},
		Progress: runlog.Heartbeat(ctx),
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(snaps, func(a, b *v1alpha1.EtcdSnapshotMetadata) int { return strings.Compare(a.Name, b.Name) })
	now := time.Now()
	expired := []string{}
	for _, m := range snaps {
		if m.Name > req.After && m.Status.Expiration != nil && m.Status.Expiration.Before(now) {
			expired = append(expired, m.Name)
		}
		if req.Limit > 0 && len(expired) >= req.Limit {
			break
		}
	}
	return expired, nil
}

// ListExpiredBackups names, in name order, the cairn backups of a location
// whose expiry has passed: at most req.Limit of them, after req.After.
// Velero's backups are Velero's to expire.
func (a *Activities) ListExpiredBackups(ctx context.Context, req v1alpha1.ExpireBackupsRequest) ([]string, error) {
	loc, err := a.Locations.Open(ctx, req.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	names, err := loc.Dirs(ctx, location.BackupsPrefix())
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	now := a.now()
	expired := []string{}
	for _, name := range names {
		if name <= req.After {
			continue
		}
		if req.Limit > 0 && len(expired) >= req.Limit {
			break
		}
		meta, _, err := backupmeta.Read(ctx, loc, name)
		switch {
		case errors.Is(err, location.ErrNotFound):
			continue // running, failed, or half-deleted: not this collector's
		case err != nil:
			a.Log.Warn("Unreadable backup metadata; not expiring it", zap.String("backup", name), zap.Error(err))
			continue
		}
		if meta.Format != v1alpha1.BackupFormatCairn || meta.Status.Expiration == nil || !meta.Status.Expiration.Before(now) {
			continue
		}
		if meta.Immutable(now) {
			// A later run deletes it, once its lock has ended.
			a.Log.Info("Expired backup is immutable; kept until its lock ends", zap.String("backup", name), zap.Time("immutableUntil", *meta.ImmutableUntil))
			continue
		}
		expired = append(expired, name)
		activity.RecordHeartbeat(ctx, name)
	}
	a.Log.Info("Expired backups", zap.Int("count", len(expired)), zap.Strings("backups", expired))
	return expired, nil
}

// PlanRetention decides which runs of a schedule its retention deletes
// at in.Now, and returns the first in.Limit of them with what the
// schedule's health needs: the payload stays bounded however many runs
// the location holds.
func (a *Activities) PlanRetention(ctx context.Context, in v1alpha1.RetentionPageInput) (*v1alpha1.RetentionPage, error) {
	listed, err := a.ListScheduleRuns(ctx, v1alpha1.ScheduleRunsInput{Schedule: in.Schedule})
	if err != nil {
		return nil, err
	}
	return v1alpha1.PageRetention(*listed, in), nil
}

// ListScheduleRuns returns the finished runs of a schedule in its
// location, and the schedule's interval now, for retention and the
// overdue check.
func (a *Activities) ListScheduleRuns(ctx context.Context, in v1alpha1.ScheduleRunsInput) (*v1alpha1.ScheduleRunsResult, error) {
	loc, err := a.Locations.Open(ctx, in.Schedule.Template.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	runs, err := backupmeta.RunsOf(ctx, loc, in.Schedule, backupmeta.Hooks{
		Unreadable: func(name string, err error) {
			a.Log.Warn("Unreadable backup metadata; retention leaves it alone", zap.String("backup", name), zap.Error(err))
		},
		Progress: runlog.Heartbeat(ctx),
	})
	if err != nil {
		return nil, err
	}
	return &v1alpha1.ScheduleRunsResult{Runs: runs, Interval: in.Schedule.Interval(time.Now())}, nil
}
