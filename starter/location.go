package starter

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/location"
)

// readMetadata reads the committed metadata of name in a location, cairn's
// or Velero's; ErrNotFound when the backup is not committed there.
func (c *Client) readMetadata(ctx context.Context, locationURL, name string) (*v1alpha1.BackupMetadata, error) {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	meta, _, err := backupmeta.Read(ctx, loc, name)
	if errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("backup %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return meta, nil
}

// committedBackups lists the committed backups of a location, by name,
// whether cairn or Velero wrote them. A backup folder without metadata
// (running, failed, half-deleted) is not listed; one whose metadata cannot
// be read is reported in skipped.
func (c *Client) committedBackups(ctx context.Context, locationURL string) (backups []*v1alpha1.BackupMetadata, skipped []string, err error) {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
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
		meta, _, err := backupmeta.Read(ctx, loc, name)
		switch {
		case errors.Is(err, location.ErrNotFound):
			continue
		case err != nil:
			skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		backups = append(backups, meta)
	}
	return backups, skipped, nil
}
