// Package datamover holds the activities a data mover runs next to the
// volume it was given: upload the volume's data into the location's kopia
// repository (and, for a restore, write it back), heartbeating progress
// and reporting it to the backup.
package datamover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/workflows"
)

// Signaler reports progress to a workflow; a Temporal client is one.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Activities move the data under Path.
type Activities struct {
	// Path is where the data mover's volume is mounted.
	Path string
	// Repository is how to open repositories; Location comes per call.
	Repository kopiarepo.Config
	Log        *zap.Logger
	Signaler   Signaler
	// CheckpointInterval is how often an upload saves a checkpoint (0:
	// 30s); ProgressInterval how often it reports (0: 10s).
	CheckpointInterval time.Duration
	ProgressInterval   time.Duration
}

// UploadVolume uploads the volume at Path as the backup's snapshot of it.
// A retry (on a new data mover) starts from the last checkpoint.
func (a *Activities) UploadVolume(ctx context.Context, in workflows.UploadVolumeInput) (*workflows.DataUploadInfo, error) {
	run, err := runlog.Start(ctx, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeLocation, err)
	}
	defer run.End()
	log := run.Log.With(zap.String("volume", in.Volume.Key()), zap.String("path", a.Path))
	hb := startHeartbeat(ctx, kopiarepo.UploadProgress{})
	defer hb.stop()
	repo, err := a.open(ctx, in.Location, false)
	if err != nil {
		log.Error("Repository not opened", zap.Error(err))
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // nothing left to flush after the upload's session

	log.Info("Uploading volume data", zap.String("repository", repo.Location()))
	report := a.reporter(ctx, in, hb)
	res, err := repo.Upload(ctx, kopiarepo.UploadRequest{
		Path: a.Path, Namespace: in.Volume.Namespace, Claim: in.Volume.Claim, Backup: in.Backup,
		CheckpointInterval: or(a.CheckpointInterval, 30*time.Second),
		ProgressInterval:   2 * time.Second,
		Progress:           report,
		OnCheckpoint:       func(p kopiarepo.UploadProgress) { hb.record(p) },
	})
	if err != nil {
		if ctx.Err() != nil {
			log.Info("Upload canceled; its checkpoints stay for the next attempt")
			return nil, temporal.NewCanceledError("upload canceled")
		}
		log.Error("Upload failed", zap.Error(err))
		return nil, fmt.Errorf("upload volume %s: %w", in.Volume.Key(), err)
	}
	log.Info("Volume data uploaded", zap.String("kopiaSnapshot", res.SnapshotID), zap.String("parent", res.ParentID),
		zap.Int64("bytes", res.Bytes), zap.Int64("files", res.Files), zap.Int64("hashedBytes", res.Progress.HashedBytes),
		zap.Int64("uploadedBytes", res.Progress.UploadedBytes), zap.Int("checkpoints", res.Checkpoints),
		zap.Bool("reused", res.Reused), zap.Duration("duration", res.Duration))
	return &workflows.DataUploadInfo{
		SnapshotID: res.SnapshotID, ParentID: res.ParentID, Bytes: res.Bytes, Files: res.Files,
		HashedBytes: res.Progress.HashedBytes, CachedBytes: res.Progress.CachedBytes, UploadedBytes: res.Progress.UploadedBytes,
		Duration: res.Duration,
	}, nil
}

// open opens the location's repository (only an existing one when
// existing is set: a restore needs the data to be there). A missing or
// wrong password, or a missing repository, is for a human to fix, not
// for a retry.
func (a *Activities) open(ctx context.Context, loc string, existing bool) (*kopiarepo.Repository, error) {
	cfg := a.Repository
	cfg.Location, cfg.NoCreate = loc, existing
	repo, err := kopiarepo.Open(ctx, cfg)
	switch {
	case errors.Is(err, kopiarepo.ErrWrongPassword), errors.Is(err, kopiarepo.ErrNoPassword):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeRepositoryPassword, nil)
	case errors.Is(err, kopiarepo.ErrNoRepository):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeVolumeDataMissing, nil)
	case err != nil:
		return nil, err
	}
	return repo, nil
}

// reporter heartbeats every progress report and, every ProgressInterval,
// tells the backup where its operation stands.
func (a *Activities) reporter(ctx context.Context, in workflows.UploadVolumeInput, hb *heartbeat) func(kopiarepo.UploadProgress) {
	due := throttle(or(a.ProgressInterval, 10*time.Second))
	return func(p kopiarepo.UploadProgress) {
		hb.record(p)
		if due() {
			a.signal(ctx, in.BackupWorkflowID, in.OperationID, uploadProgress(p))
		}
	}
}

// throttle reports true at most once per interval (and on its first
// call).
func throttle(interval time.Duration) func() bool {
	var mu sync.Mutex
	var last time.Time
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < interval {
			return false
		}
		last = time.Now()
		return true
	}
}

// signal tells the owning workflow where its operation stands.
func (a *Activities) signal(ctx context.Context, workflowID, operation, progress string) {
	if a.Signaler == nil || workflowID == "" {
		return
	}
	msg := workflows.OperationProgress{ID: operation, Phase: workflows.OperationInProgress, Progress: progress}
	if err := a.Signaler.SignalWorkflow(ctx, workflowID, "", workflows.SignalOperationProgress, msg); err != nil {
		a.Log.Debug("Progress not delivered", zap.Error(err))
	}
}

// uploadProgress reads "uploading: 1.2 GiB of 2.0 GiB (60%), 310 MiB
// sent, checkpoint at 1.0 GiB".
func uploadProgress(p kopiarepo.UploadProgress) string {
	done := uint64(p.HashedBytes + p.CachedBytes)
	var s string
	if p.TotalBytes <= 0 {
		s = fmt.Sprintf("uploading: %s read, %s sent", humanize.IBytes(done), humanize.IBytes(uint64(p.UploadedBytes)))
	} else {
		s = fmt.Sprintf("uploading: %s of %s (%.0f%%), %s sent", humanize.IBytes(done), humanize.IBytes(uint64(p.TotalBytes)),
			100*p.Done(), humanize.IBytes(uint64(p.UploadedBytes)))
	}
	if p.Checkpoints > 0 {
		s += ", checkpoint at " + humanize.IBytes(uint64(p.CheckpointedBytes))
	}
	return s
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
