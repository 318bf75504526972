package kopiarepo

import (
	"context"
	"sync/atomic"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/manifest"
	"github.com/kopia/kopia/snapshot"
	"github.com/kopia/kopia/snapshot/upload"
)

// checkpointWatch is the writer an uploader gets: it passes everything
// on and tells the counter when a checkpoint became durable. Kopia has no
// callback for that; a checkpoint is an incomplete snapshot manifest put
// by the uploader and then flushed, so that is what it watches for.
type checkpointWatch struct {
	repo.RepositoryWriter
	prog *counter
	// pending is the size a checkpoint put but not yet flushed covers,
	// -1 when there is none.
	pending atomic.Int64
}

func watchCheckpoints(w repo.RepositoryWriter, prog *counter) *checkpointWatch {
	c := &checkpointWatch{RepositoryWriter: w, prog: prog}
	c.pending.Store(-1)
	return c
}

func (c *checkpointWatch) PutManifest(ctx context.Context, labels map[string]string, payload any) (manifest.ID, error) {
	id, err := c.RepositoryWriter.PutManifest(ctx, labels, payload)
	if m, ok := payload.(*snapshot.Manifest); ok && err == nil && m.IncompleteReason == upload.IncompleteReasonCheckpoint {
		c.pending.Store(snapshotBytes(m))
	}
	return id, err
}

func (c *checkpointWatch) Flush(ctx context.Context) error {
	if err := c.RepositoryWriter.Flush(ctx); err != nil {
		return err
	}
	if covered := c.pending.Swap(-1); covered >= 0 {
		c.prog.checkpointed(covered)
	}
	return nil
}
