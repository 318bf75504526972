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
	keys := location.Backup(name)
	return c.copyLogs(ctx, v.Location, keys.Logs(), keys.LogsPrefix(), w)
}

// locationOr returns url, or the default location when it is empty.
func (c *Client) locationOr(url string) string {
	if url == "" {
		return c.opts.DefaultLocation
	}
	return url
}

// copyLogs writes a run's log to w: the joined logKey once the run ended,
// else the chunks under chunksPrefix that attempts have stored so far.
func (c *Client) copyLogs(ctx context.Context, locURL, logKey, chunksPrefix string, w io.Writer) error {
	loc, err := c.opts.Opener.Open(ctx, c.locationOr(locURL))
	if err != nil {
		return err
	}
	defer loc.Close()
	r, err := loc.NewReader(ctx, logKey)
	switch {
	case err == nil:
		defer func() { _ = r.Close() }() // read only
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("read %s: %w", logKey, err)
		}
		if _, err := io.Copy(w, gz); err != nil {
			return fmt.Errorf("read %s: %w", logKey, err)
		}
		return nil
	case !errors.Is(err, location.ErrNotFound):
		return err
	}
	chunks, err := loc.Keys(ctx, chunksPrefix)
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
