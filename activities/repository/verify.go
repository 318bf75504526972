package repository

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
)

// VerifyBackupVolumes checks the backup's moved volume data with kopia's
// own verification: every file's contents are indexed and their pack
// blobs exist, and a sample of the files (all with Full) reads back
// whole. A backup that moved no data gets nil.
func (a *Activities) VerifyBackupVolumes(ctx context.Context, in v1alpha1.VerifyBackupRequest) (*v1alpha1.VolumeDataVerified, error) {
	loc, err := a.Locations.Open(ctx, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	vols, err := backupmeta.Volumes(ctx, loc, in.Backup)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, v := range vols {
		if v.Upload != nil && v.Upload.SnapshotID != "" {
			ids = append(ids, v.Upload.SnapshotID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	cfg := a.Repository
	cfg.Location, cfg.NoCreate = in.Location, true
	repo, err := open(ctx, cfg)
	if errors.Is(err, kopiarepo.ErrNoRepository) {
		return &v1alpha1.VolumeDataVerified{Snapshots: len(ids), Errors: []string{"the location holds no kopia repository"}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // verification writes nothing
	percent := float64(v1alpha1.VerifySamplePercent)
	if in.Full {
		percent = 100
	}
	res, err := repo.VerifySnapshots(ctx, ids, percent)
	if err != nil {
		return nil, err
	}
	a.Log.Info("Verified the backup's volume data", zap.String("backup", in.Backup), zap.Int("snapshots", len(ids)),
		zap.Int64("files", res.Files), zap.Int64("readBytes", res.ReadBytes), zap.Strings("errors", res.Errors))
	return &v1alpha1.VolumeDataVerified{Snapshots: len(ids), Files: res.Files, Bytes: res.Bytes, ReadFiles: res.ReadFiles,
		ReadBytes: res.ReadBytes, Errors: res.Errors}, nil
}
