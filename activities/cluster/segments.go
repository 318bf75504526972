package cluster

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// storeSegment stores a part's items as a tarball segment, when the
// backup's start time is known, so that finalize copies them into the
// tarball instead of reading the part and compressing its items: that
// work is done here, while the next page is on its way.
//
// No part goes with a segment of other items. Both are stored under the
// part's name, the part first; an attempt that stops between them is
// retried from its last heartbeat, which is before this part, and the
// retry stores both again or removes both (removeEarlierParts).
func (c *collector) storeSegment(ctx context.Context, key string, items []kube.Item) error {
	start := c.in.StartTime
	if start == nil {
		return nil
	}
	var buf bytes.Buffer
	sw := tarball.NewSegment(&buf, *start, len(items))
	for _, it := range items {
		version := c.res.GVR.Version
		if len(c.actions) > 0 {
			// An extension may answer with another version of the object.
			version = tarball.VersionOf(gjson.GetBytes(it.Raw, "apiVersion").String())
		}
		if err := sw.Add(c.gr, version, it.Namespace, it.Name, it.Raw); err != nil {
			return fmt.Errorf("segment of %s: %w", key, err)
		}
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("segment of %s: %w", key, err)
	}
	return c.run.Loc.WriteAll(ctx, c.run.Keys.Segment(key), buf.Bytes())
}
