package starter

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cairn-backup/cairn/internal/location"
)

// BackupLogs writes the backup's log as JSON lines to w: the stored
// logs.jsonl.gz of a finished backup, or the chunks each finished
// activity attempt has stored so far for one still running.
func (c *Client) BackupLogs(ctx context.Context, name string, w io.Writer) error {
	v, err := c.GetBackup(ctx, name)
	if err != nil {
		return err
	}
	locURL := v.Location
	if locURL == "" {
		locURL = c.opts.DefaultLocation
	}
	loc, err := location.Open(ctx, locURL)
	if err != nil {
		return err
	}
	defer loc.Close()
	keys := location.Backup(name)

	r, err := loc.NewReader(ctx, keys.Logs())
	switch {
	case err == nil:
		defer r.Close()
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("read logs of backup %s: %w", name, err)
		}
		if _, err := io.Copy(w, gz); err != nil {
			return fmt.Errorf("read logs of backup %s: %w", name, err)
		}
		return nil
	case !errors.Is(err, location.ErrNotFound):
		return err
	}
	chunks, err := loc.Keys(ctx, keys.LogsPrefix())
	if err != nil {
		return err
	}
	sort.Strings(chunks) // named by start time: oldest attempt first
	for _, key := range chunks {
		if err := loc.CopyTo(ctx, key, w); err != nil && !errors.Is(err, location.ErrNotFound) {
			return err
		}
	}
	return nil
}
