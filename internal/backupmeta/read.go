// Package backupmeta finds what a location holds of one backup, whichever
// tool wrote it: cairn's backup.json or Velero's velero-backup.json.
package backupmeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/velero"
)

// MaxMetadataBytes bounds a backup's metadata file: a real one is a few
// KiB.
const MaxMetadataBytes = 4 << 20

// ErrCorrupt marks metadata that exists but does not decode, or is past
// MaxMetadataBytes: no retry reads it better.
var ErrCorrupt = errors.New("corrupt backup metadata")

// Read returns the committed metadata of the backup called name and the
// key of its resources tarball. cairn's backup.json wins when both tools
// wrote into the same folder. A folder with neither file is an error
// wrapping location.ErrNotFound; a file that exists but cannot be decoded
// is another error, so callers can tell "absent" from "unreadable".
func Read(ctx context.Context, loc *location.Location, name string) (*v1alpha1.BackupMetadata, string, error) {
	keys := location.Backup(name)
	data, err := loc.ReadAtMost(ctx, keys.Metadata(), MaxMetadataBytes)
	switch {
	case errors.Is(err, location.ErrTooLarge):
		return nil, "", fmt.Errorf("%w: %w", ErrCorrupt, err)
	case err == nil:
		var meta v1alpha1.BackupMetadata
		if err := json.Unmarshal(data, &meta); err != nil {
			return nil, "", fmt.Errorf("%w: decode %s: %w", ErrCorrupt, keys.Metadata(), err)
		}
		if meta.Format == "" {
			meta.Format = v1alpha1.BackupFormatCairn
		}
		return &meta, keys.Resources(), nil
	case !errors.Is(err, location.ErrNotFound):
		return nil, "", err
	}

	data, err = loc.ReadAtMost(ctx, keys.VeleroMetadata(), MaxMetadataBytes)
	switch {
	case errors.Is(err, location.ErrTooLarge):
		return nil, "", fmt.Errorf("%w: %w", ErrCorrupt, err)
	case errors.Is(err, location.ErrNotFound):
		return nil, "", fmt.Errorf("backup %q: %w", name, location.ErrNotFound)
	case err != nil:
		return nil, "", err
	}
	b, err := velero.Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrCorrupt, keys.VeleroMetadata(), err)
	}
	// The tarball is named after the folder, so a metadata file that names
	// another backup would send a restore to the wrong objects.
	if b.Name != name {
		return nil, "", fmt.Errorf("%w: %s names backup %q, not %q", ErrCorrupt, keys.VeleroMetadata(), b.Name, name)
	}
	meta := b.Metadata()
	return &meta, keys.VeleroResources(), nil
}
