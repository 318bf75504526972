// Package runlog gives each activity attempt a logger with the backup's
// (or restore's) name on every line, and stores the attempt's lines in the
// backup location when it ends, so a run's log survives the worker that
// wrote it.
package runlog

import (
	"compress/gzip"
	"context"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/logging"
)

// Run is the context of one activity attempt working on one backup or
// one restore.
type Run struct {
	Log *zap.Logger
	Loc *location.Location
	// Keys are the backup's keys (for a restore: of the backup it reads).
	Keys location.BackupKeys
	// Restore are the restore's keys; zero for a backup.
	Restore location.RestoreKeys
	capture *logging.Capture
	logKey  string
	info    activity.Info
}

// Start opens the backup's location and a captured logger for this attempt.
func Start(ctx context.Context, locs *location.Opener, base *zap.Logger, backup, locationURL string) (*Run, error) {
	keys := location.Backup(backup)
	run, err := begin(ctx, locs, base, locationURL, keys.LogsPrefix(), zap.String("backup", backup))
	if err != nil {
		return nil, err
	}
	run.Keys = keys
	return run, nil
}

// StartRestore is Start for an activity of the restore called restore,
// which reads the backup called backup ("" when the step does not).
func StartRestore(ctx context.Context, locs *location.Opener, base *zap.Logger, restore, backup, locationURL string) (*Run, error) {
	keys := location.Restore(restore)
	run, err := begin(ctx, locs, base, locationURL, keys.LogsPrefix(), zap.String("restore", restore))
	if err != nil {
		return nil, err
	}
	run.Restore = keys
	if backup != "" {
		run.Keys = location.Backup(backup)
	}
	return run, nil
}

func begin(ctx context.Context, locs *location.Opener, base *zap.Logger, locationURL, logsPrefix string, subject zap.Field) (*Run, error) {
	loc, err := locs.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	info := activity.GetInfo(ctx)
	capture := logging.NewCapture(base,
		subject,
		zap.String("activity", info.ActivityType.Name),
		zap.Int32("attempt", info.Attempt),
	)
	return &Run{
		Log:     capture.Logger,
		Loc:     loc,
		capture: capture,
		info:    info,
		logKey: fmt.Sprintf("%s%020d-%s-%s-%d.jsonl", logsPrefix, info.StartedTime.UnixNano(),
			info.ActivityType.Name, info.ActivityID, info.Attempt),
	}, nil
}

// Info is the activity attempt's Temporal info.
func (r *Run) Info() activity.Info { return r.info }

// Captured returns the lines logged so far in this attempt.
func (r *Run) Captured() []byte { return r.capture.Bytes() }

// End stores the captured lines and closes the location. It uses its own
// context so a canceled activity still keeps its log.
func (r *Run) End() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if data := r.capture.Bytes(); len(data) > 0 {
		if err := r.Loc.WriteAll(ctx, r.logKey, data); err != nil {
			r.Log.Warn("Could not store activity log", zap.Error(err))
		}
	}
	_ = r.Loc.Close()
}

// JoinLogs writes the log chunks of every activity attempt under
// chunksPrefix, oldest first, and this attempt's lines so far, into one
// gzipped JSON-lines object at key.
func (r *Run) JoinLogs(ctx context.Context, chunksPrefix, key string) error {
	keys, err := r.Loc.Keys(ctx, chunksPrefix)
	if err != nil {
		return err
	}
	sort.Strings(keys)
	w, err := r.Loc.NewWriter(ctx, key)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	beat := Heartbeat(ctx)
	for i, k := range keys {
		if err := r.Loc.CopyTo(ctx, k, gz); err != nil {
			w.Abort()
			return err
		}
		beat(i)
	}
	if _, err := gz.Write(r.Captured()); err != nil {
		w.Abort()
		return err
	}
	if err := gz.Close(); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

// Heartbeat reports an activity's progress through a long loop whose
// retry starts over, so a count is all the details need to say.
func Heartbeat(ctx context.Context) func(n int) {
	return func(n int) { activity.RecordHeartbeat(ctx, n) }
}
