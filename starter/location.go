package starter

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// readMetadata reads the committed backup.json of name in a location;
// ErrNotFound when the backup is not committed there.
func readMetadata(ctx context.Context, locationURL, name string) (*workflows.BackupMetadata, error) {
	loc, err := location.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	var meta workflows.BackupMetadata
	err = loc.ReadJSON(ctx, location.Backup(name).Metadata(), &meta)
	if errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("backup %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &meta, nil
}

// committedBackups lists the committed backups of a location, by name. A
// backup folder without backup.json (running, failed, half-deleted) is
// not listed; one whose backup.json cannot be read is reported in skipped.
func committedBackups(ctx context.Context, locationURL string) (backups []*workflows.BackupMetadata, skipped []string, err error) {
	loc, err := location.Open(ctx, locationURL)
	if err != nil {
		return nil, nil, err
	}
	defer loc.Close()
	names, err := loc.Dirs(ctx, location.BackupsPrefix())
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		var meta workflows.BackupMetadata
		err := loc.ReadJSON(ctx, location.Backup(name).Metadata(), &meta)
		switch {
		case errors.Is(err, location.ErrNotFound):
			continue
		case err != nil:
			skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		backups = append(backups, &meta)
	}
	return backups, skipped, nil
}
