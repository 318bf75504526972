package cluster

import (
	"context"
	"fmt"

	"github.com/cairn-backup/cairn/internal/kube"
)

// fetched is the outcome of a read-ahead request.
type fetched struct {
	page *kube.Page
	err  error
}

// readAhead requests one page in the background. It touches no progress:
// the page counts only once the main loop has stored it.
func (c *collector) readAhead(ctx context.Context, shard int, cont string) <-chan fetched {
	ch := make(chan fetched, 1)
	go func() {
		page, err := c.lister.List(ctx, c.res, c.listOptions(shard, cont))
		ch <- fetched{page, err}
	}()
	return ch
}

// nextPage returns the page the progress points at: the read-ahead one
// when there is one, else a request made now. An unreachable API server
// is retried here, with the reachability clock in the heartbeat.
func (c *collector) nextPage(ctx context.Context, ahead <-chan fetched) (*kube.Page, error) {
	if ahead != nil {
		f := <-ahead
		if f.err == nil || !kube.IsUnreachable(f.err) {
			if f.err != nil {
				return nil, fmt.Errorf("list %s: %w", c.gr, f.err)
			}
			return f.page, nil
		}
	}
	return c.listPage(ctx)
}

// following returns where the page after this one is: the same shard with
// its continue token, or the start of the next shard.
func (c *collector) following(page *kube.Page) (shard int, cont string, more bool) {
	switch {
	case page.Continue != "":
		return c.progress.Current.Shard, page.Continue, true
	case c.progress.Current.Shard+1 < len(c.shards):
		return c.progress.Current.Shard + 1, "", true
	}
	return 0, "", false
}

func (c *collector) listOptions(shard int, cont string) kube.ListOptions {
	opts := kube.ListOptions{Namespace: c.shards[shard], Limit: c.in.Options.PageSize, Continue: cont}
	if !c.isNSType {
		opts.LabelSelector = c.labels.Server
	}
	return opts
}

func (c *collector) listPage(ctx context.Context) (*kube.Page, error) {
	opts := c.listOptions(c.progress.Current.Shard, c.progress.Current.Continue)
	var page *kube.Page
	err := c.progress.Current.Reachability.Do(ctx, c.in.Options.ClusterUnreachableTimeout.Duration, c.log, func() { c.heartbeat(ctx) }, func() error {
		var lerr error
		page, lerr = c.lister.List(ctx, c.res, opts)
		return lerr
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", c.gr, err)
	}
	return page, nil
}
