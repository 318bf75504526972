package store

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// CleanupBackupWork removes a backup's intermediate state. With Discard
// (a failed or canceled backup) it also removes any half-written result
// but keeps the log, so the user can read why it stopped. A committed
// backup (backup.json present) is never discarded.
func (a *Activities) CleanupBackupWork(ctx context.Context, in v1alpha1.CleanupInput) error {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	// Not run.End(): its log chunk would land in the prefix just removed.
	defer func() { _ = run.Loc.Close() }()
	keys := run.Keys

	committed, err := run.Loc.Exists(ctx, keys.Metadata())
	if err != nil {
		return err
	}
	if in.Discard && !committed {
		run.Log.Info("Discarding the unfinished backup's data")
		now := time.Now()
		metrics.RunEnded(v1alpha1.KindBackup, string(in.Phase), in.StartTime, &now, 0)
		if _, err := run.Loc.ReadAll(ctx, keys.Logs()); errors.Is(err, location.ErrNotFound) {
			if err := run.JoinLogs(ctx, keys.LogsPrefix(), keys.Logs()); err != nil {
				return err
			}
		}
		for _, k := range []string{keys.Resources(), keys.Results(), keys.Operations(), keys.Volumes(), keys.Manifest()} {
			if err := run.Loc.Delete(ctx, k); err != nil {
				return err
			}
		}
	}
	if err := removeWork(ctx, run); err != nil {
		return err
	}
	run.Log.Info("Removed intermediate state", zap.Bool("discard", in.Discard))
	return nil
}

// removeWork removes a backup's intermediate state: the parts and
// plans under its work prefix, and its activities' log chunks (joined
// into logs.jsonl.gz, or kept there by a discard).
func removeWork(ctx context.Context, run *runlog.Run) error {
	if err := run.Loc.DeletePrefix(ctx, run.Keys.Work(), runlog.Heartbeat(ctx)); err != nil {
		return err
	}
	return run.Loc.DeletePrefix(ctx, run.Keys.LogsPrefix(), runlog.Heartbeat(ctx))
}
