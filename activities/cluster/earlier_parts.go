package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// An attempt that lists a type again, from its start or from where the
// last heartbeat left it, stores its pages under the same names as the
// attempt before it, and so replaces them. But the pages need not be the
// same: a type listed afresh (no heartbeat of the earlier attempt named
// it), or gone on with after its continue token expired, may have shrunk
// by a page, and a page whose items are all filtered out now is not
// stored. The earlier attempt's part would then stay, and finalize would
// put its items into the backup: objects deleted since, or twice. So a
// retried attempt notes the parts stored past where it starts, and
// removes, once the type is done, those it did not store again.

// noteEarlierParts records, on a retried attempt, the parts of the
// collector's shards stored at or past where it starts.
func (c *collector) noteEarlierParts(ctx context.Context) error {
	if !c.retry {
		return nil
	}
	prefix := c.run.Keys.PartsPrefix(c.gr)
	keys, err := c.run.Loc.Keys(ctx, prefix)
	if err != nil {
		return fmt.Errorf("list the parts an earlier attempt stored: %w", err)
	}
	shardOf := make(map[int]int, len(c.shards))
	for i := range c.shards {
		shardOf[c.partShard(i)] = i
	}
	c.earlier = map[string]bool{}
	for _, key := range keys {
		stored, part, ok := partNumbers(strings.TrimPrefix(key, prefix))
		if !ok {
			continue
		}
		shard, ours := shardOf[stored]
		if ours && (shard > c.progress.Shard || shard == c.progress.Shard && part >= c.progress.Part) {
			c.earlier[key] = true
		}
	}
	return nil
}

// partNumbers are the shard and page numbers of a part's file name.
func partNumbers(name string) (shard, part int, ok bool) {
	s, p, found := strings.Cut(strings.TrimSuffix(name, ".jsonl"), "-")
	shard, err1 := strconv.Atoi(s)
	part, err2 := strconv.Atoi(p)
	return shard, part, found && err1 == nil && err2 == nil
}

// storedAgain notes that this attempt stored key itself.
func (c *collector) storedAgain(key string) {
	delete(c.earlier, key)
}

// removeEarlierParts removes the parts an earlier attempt stored that
// this one did not store again, with their segments and what extensions
// answered for their items.
func (c *collector) removeEarlierParts(ctx context.Context) error {
	for key := range c.earlier {
		for _, k := range []string{key, c.run.Keys.Segment(key), c.run.Keys.AdditionalRefs(key), c.run.Keys.ExtensionOperations(key)} {
			if err := c.run.Loc.Delete(ctx, k); err != nil {
				return err
			}
		}
		c.log.Info("Removed a part an earlier attempt stored and this one did not", zap.String("part", key))
	}
	c.earlier = nil
	return nil
}
