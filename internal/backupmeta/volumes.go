package backupmeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// Volumes reads the backup's volumes.json. A backup without one (no
// volumes, or written by Velero) has none: an empty list, no error.
func Volumes(ctx context.Context, loc *location.Location, backup string) ([]v1alpha1.VolumeRecord, error) {
	var vols v1alpha1.VolumesFile
	err := loc.ReadJSON(ctx, location.Backup(backup).Volumes(), &vols)
	if errors.Is(err, location.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read volumes of backup %s: %w", backup, err)
	}
	return vols.Volumes, nil
}

// maxVolumesBytes bounds a volumes.json read from a location: a few
// hundred bytes per volume.
const maxVolumesBytes = 64 << 20

// CheckedVolumes is Volumes checked against the backup's manifest (m may
// be nil: a backup from before manifests, or Velero's): a volumes.json
// that differs from the manifest's digest, or that is not in it, is an
// error wrapping location.ErrChecksum, so that a restore never takes a
// snapshot ID from a file someone changed.
func CheckedVolumes(ctx context.Context, loc *location.Location, backup string, m *location.Manifest) ([]v1alpha1.VolumeRecord, error) {
	if m == nil {
		return Volumes(ctx, loc, backup)
	}
	key := location.Backup(backup).Volumes()
	want, listed := m.Objects[path.Base(key)]
	if !listed {
		exists, err := loc.Exists(ctx, key)
		switch {
		case err != nil:
			return nil, err
		case exists:
			return nil, fmt.Errorf("%s: %w: it is not in the manifest", key, location.ErrChecksum)
		}
		return nil, nil
	}
	r, err := loc.NewCheckedReader(ctx, key, want)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(r, maxVolumesBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read volumes of backup %s: %w", backup, err)
	case len(data) > maxVolumesBytes:
		return nil, fmt.Errorf("%s: %w of %d bytes", key, location.ErrTooLarge, maxVolumesBytes)
	}
	var vols v1alpha1.VolumesFile
	if err := json.Unmarshal(data, &vols); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	return vols.Volumes, nil
}
