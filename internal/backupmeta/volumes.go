package backupmeta

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// Volumes reads the backup's volumes.json. A backup without one (no
// volumes, or written by Velero) has none: an empty list, no error.
func Volumes(ctx context.Context, loc *location.Location, backup string) ([]workflows.VolumeRecord, error) {
	var vols workflows.VolumesFile
	err := loc.ReadJSON(ctx, location.Backup(backup).Volumes(), &vols)
	if errors.Is(err, location.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read volumes of backup %s: %w", backup, err)
	}
	return vols.Volumes, nil
}
