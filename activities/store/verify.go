package store

import (
	"context"
	"errors"
	"fmt"
	"path"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/location"
)

// VerifyBackupData re-reads every object of a committed backup as stored
// and compares it with the manifest backup.json vouches for. It needs no
// encryption key: the digests are of the stored bytes. What differs is
// the verdict, not an error; a backup that is not there, or whose
// metadata does not decode, is.
func (a *Activities) VerifyBackupData(ctx context.Context, in v1alpha1.VerifyBackupRequest) (*v1alpha1.VerifyBackupResult, error) {
	loc, err := a.Locations.Open(ctx, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	meta, _, err := backupmeta.Read(ctx, loc, in.Backup)
	switch {
	case errors.Is(err, location.ErrNotFound):
		msg := fmt.Sprintf("backup %q is not in %s", in.Backup, location.Display(in.Location))
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeBackupNotFound, err)
	case errors.Is(err, backupmeta.ErrCorrupt):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeCorruptBackup, err)
	case err != nil:
		return nil, err
	}
	res := &v1alpha1.VerifyBackupResult{Backup: in.Backup}
	if meta.ManifestSHA256 == "" {
		return res, nil
	}
	res.Manifest = true
	keys := location.Backup(in.Backup)
	m, err := loc.ReadManifest(ctx, keys, meta.ManifestSHA256)
	switch {
	case errors.Is(err, location.ErrChecksum):
		res.Differ = append(res.Differ, path.Base(keys.Manifest())+": not the manifest backup.json records")
		return res, nil
	case errors.Is(err, location.ErrNotFound):
		res.Differ = append(res.Differ, path.Base(keys.Manifest())+": missing")
		return res, nil
	case err != nil:
		return nil, err
	}
	for _, name := range m.Names() {
		want := m.Objects[name]
		got, err := loc.Digest(ctx, keys.Prefix()+name, func(n int64) { activity.RecordHeartbeat(ctx, res.Bytes+n) })
		switch {
		case errors.Is(err, location.ErrNotFound):
			res.Differ = append(res.Differ, name+": missing")
			continue
		case err != nil:
			return nil, err
		}
		res.Objects++
		res.Bytes += got.Size
		switch {
		case got.Size != want.Size:
			res.Differ = append(res.Differ, fmt.Sprintf("%s: %d bytes, not %d", name, got.Size, want.Size))
		case got.SHA256 != want.SHA256:
			res.Differ = append(res.Differ, name+": SHA-256 differs")
		}
	}
	a.Log.Info("Verified backup", zap.String("backup", in.Backup), zap.Int("objects", res.Objects),
		zap.Int64("bytes", res.Bytes), zap.Strings("differ", res.Differ))
	return res, nil
}
