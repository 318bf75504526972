// Package runlog gives each activity attempt a logger with the backup's
// name on every line, and stores the attempt's lines in the backup
// location when it ends, so a backup's log survives the worker that wrote it.
package runlog

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/logging"
)

// Run is the context of one activity attempt working on one backup.
type Run struct {
	Log     *zap.Logger
	Loc     *location.Location
	Keys    location.BackupKeys
	capture *logging.Capture
	logKey  string
}

// Start opens the backup's location and a captured logger for this attempt.
func Start(ctx context.Context, base *zap.Logger, backup, locationURL string) (*Run, error) {
	loc, err := location.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	info := activity.GetInfo(ctx)
	capture := logging.NewCapture(base,
		zap.String("backup", backup),
		zap.String("activity", info.ActivityType.Name),
		zap.Int32("attempt", info.Attempt),
	)
	keys := location.Backup(backup)
	return &Run{
		Log:     capture.Logger,
		Loc:     loc,
		Keys:    keys,
		capture: capture,
		logKey: fmt.Sprintf("%s%020d-%s-%s-%d.jsonl", keys.LogsPrefix(), info.StartedTime.UnixNano(),
			info.ActivityType.Name, info.ActivityID, info.Attempt),
	}, nil
}

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
