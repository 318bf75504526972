// Package datamover holds the activities a data mover runs next to the
// volume it was given: upload the volume's data into the location's kopia
// repository (and, for a restore, write it back), heartbeating progress
// and reporting it to the backup.
package datamover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// Activities move the data under Path.
type Activities struct {
	// Path is where the data mover's volume is mounted.
	Path string
	// MarkerDir, for a pod volume restore, is the restored pod's
	// directory of markers its init container waits for.
	MarkerDir string
	// Repository is how to open repositories; Location comes per call.
	Repository kopiarepo.Config
	Log        *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// CheckpointInterval is how often an upload saves a checkpoint (0:
	// 30s).
	CheckpointInterval time.Duration
}

// UploadVolume uploads the volume at Path as the backup's snapshot of it.
// A retry (on a new data mover) starts from the last checkpoint.
func (a *Activities) UploadVolume(ctx context.Context, in v1alpha1.UploadVolumeInput) (*v1alpha1.DataUploadInfo, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	log := run.Log.With(zap.String("volume", in.Volume.Key()), zap.String("operation", in.OperationID), zap.String("path", a.Path))
	hb := startHeartbeat(ctx, beatOfUpload(kopiarepo.UploadProgress{}))
	defer hb.stop()
	repo, err := a.open(ctx, in.Location, false)
	if err != nil {
		log.Error("Repository not opened", zap.Error(err))
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // nothing left to flush after the upload's session

	log.Info("Uploading volume data", zap.String("repository", repo.Location()))
	res, err := repo.Upload(ctx, kopiarepo.UploadRequest{
		Path: a.Path, Namespace: in.Volume.Namespace, Claim: in.Volume.DataName(), Backup: in.Backup,
		CheckpointInterval: or(a.CheckpointInterval, 30*time.Second),
		ProgressInterval:   2 * time.Second,
		// Progress goes into the heartbeat only: describe reads it from
		// there, so a long upload adds no event to any history.
		Progress:     func(p kopiarepo.UploadProgress) { hb.record(beatOfUpload(p)) },
		OnCheckpoint: func(p kopiarepo.UploadProgress) { hb.record(beatOfUpload(p)) },
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
	return &v1alpha1.DataUploadInfo{
		SnapshotID: res.SnapshotID, ParentID: res.ParentID, Bytes: res.Bytes, Files: res.Files,
		HashedBytes: res.Progress.HashedBytes, CachedBytes: res.Progress.CachedBytes, UploadedBytes: res.Progress.UploadedBytes,
		Duration: res.Duration,
	}, nil
}

// open connects to the location's repository. A data mover never creates
// one: the worker does before a backup's first data mover
// (EnsureRepository), and a restore needs the data to be there. A missing
// or wrong password, or a missing repository, is for a human to fix, not
// for a retry. A restore, which reads its data once, opens it uncached.
func (a *Activities) open(ctx context.Context, loc string, restore bool) (*kopiarepo.Repository, error) {
	cfg := a.Repository
	cfg.Location, cfg.NoCreate, cfg.Uncached = loc, true, restore
	repo, err := kopiarepo.Open(ctx, cfg)
	switch {
	case errors.Is(err, kopiarepo.ErrWrongPassword), errors.Is(err, kopiarepo.ErrNoPassword):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeRepositoryPassword, nil)
	case errors.Is(err, kopiarepo.ErrNoRepository):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeVolumeDataMissing, nil)
	case err != nil:
		return nil, err
	}
	return repo, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
