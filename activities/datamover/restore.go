package datamover

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// RestoreVolumeData writes the kopia snapshot into the fresh volume at
// Path. A retry (on a new data mover, on the same volume) skips the files
// an earlier one finished.
func (a *Activities) RestoreVolumeData(ctx context.Context, in v1alpha1.RestoreVolumeDataInput) (*v1alpha1.DataDownloadInfo, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	log := run.Log.With(zap.String("volume", in.Volume), zap.String("kopiaSnapshot", in.SnapshotID), zap.String("operation", in.OperationID), zap.String("path", a.Path))
	hb := startHeartbeat(ctx, beatOfRestore(kopiarepo.RestoreProgress{}))
	defer hb.stop()
	repo, err := a.open(ctx, in.Location, true)
	if err != nil {
		log.Error("Repository not opened", zap.Error(err))
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // a restore writes nothing to the repository

	if in.Marker != "" {
		// A pod's volume shares its node's file system: fail for good,
		// and say so, rather than fill it.
		if err := checkFreeSpace(a.Path, in.Bytes); err != nil {
			log.Error("Volume data not restored", zap.Error(err))
			return nil, err
		}
	}
	log.Info("Restoring volume data", zap.String("repository", repo.Location()))
	res, err := repo.Restore(ctx, kopiarepo.RestoreRequest{SnapshotID: in.SnapshotID, Backup: in.Backup, Volume: in.SourceVolume,
		Path: a.Path, Progress: func(p kopiarepo.RestoreProgress) { hb.record(beatOfRestore(p)) }})
	switch {
	case err != nil && ctx.Err() != nil:
		log.Info("Restore canceled")
		return nil, temporal.NewCanceledError("restore canceled")
	case errors.Is(err, kopiarepo.ErrSnapshotMismatch):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeCorruptBackup, err)
	case errors.Is(err, kopiarepo.ErrSnapshotNotFound):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeVolumeDataMissing, err)
	case err != nil:
		log.Error("Restore failed", zap.Error(err))
		return nil, fmt.Errorf("restore volume %s: %w", in.Volume, err)
	}
	log.Info("Volume data restored", zap.Int64("bytes", res.Bytes), zap.Int64("files", res.Files),
		zap.Int64("skippedBytes", res.Skipped), zap.Duration("duration", res.Duration))
	if in.Marker != "" {
		// The restored pod starts once every volume's marker is there.
		if err := a.writeMarker(in.Marker, v1alpha1.MarkerRestored); err != nil {
			return nil, err
		}
	}
	return &v1alpha1.DataDownloadInfo{Bytes: res.Bytes, Files: res.Files, SkippedBytes: res.Skipped, Duration: res.Duration}, nil
}
