package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cairn-backup/cairn/internal/kube"
)

// fetched is the outcome of a read-ahead request.
type fetched struct {
	page *kube.Page
	err  error
}

// maxAhead bounds the pages requested and not yet stored: the next one,
// and the one after it once the next one's answer has said where it
// starts.
const maxAhead = 2

// readAhead is the pages one collect has requested ahead of storing
// them, in generations: dropping one cancels every request it made.
type readAhead struct {
	parent context.Context
	gen    *aheadGen
}

type aheadGen struct {
	ctx    context.Context
	cancel context.CancelFunc
	out    atomic.Int32 // requested and not yet taken
}

func newReadAhead(ctx context.Context) *readAhead {
	ra := &readAhead{parent: ctx}
	ra.drop()
	return ra
}

// drop cancels what was requested ahead and starts afresh.
func (ra *readAhead) drop() {
	if ra.gen != nil {
		ra.gen.cancel()
	}
	g := &aheadGen{}
	g.ctx, g.cancel = context.WithCancel(ra.parent)
	ra.gen = g
}

// reserve takes room for one more page, if there is any.
func (g *aheadGen) reserve() bool {
	for {
		n := g.out.Load()
		if n >= maxAhead {
			return false
		}
		if g.out.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// prefetch is one page requested ahead of its turn.
type prefetch struct {
	gen  *aheadGen
	page chan fetched
	// next is the page after it, requested as soon as this one's answer
	// said where it starts and there was room; nil when it was not.
	next atomic.Pointer[prefetch]

	mu sync.Mutex
	// after is where the page after it starts, once the answer said so.
	after *pageAt
}

// pageAt is where a page starts: its shard and continue token.
type pageAt struct {
	shard int
	cont  string
}

// askNext requests the page after pf, once its start is known and there
// is room: when the answer tells it, or when the page before pf is
// taken and makes room.
func (pf *prefetch) askNext(c *collector) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if pf.after == nil || pf.next.Load() != nil || !pf.gen.reserve() {
		return
	}
	pf.next.Store(c.request(pf.gen, pf.after.shard, pf.after.cont))
}

// request asks for the page at shard and cont in the background, with
// room reserved for it in g. As soon as the answer says where the
// following page starts, that one is requested too, room permitting, so
// the API server prepares it while this one is still read. It touches no
// progress: a page counts only once the main loop has stored it.
func (c *collector) request(g *aheadGen, shard int, cont string) *prefetch {
	pf := &prefetch{gen: g, page: make(chan fetched, 1)}
	opts := c.listOptions(shard, cont)
	opts.Continued = func(token string) {
		if s, ct, more := c.after(shard, token); more {
			pf.mu.Lock()
			pf.after = &pageAt{s, ct}
			pf.mu.Unlock()
			pf.askNext(c)
		}
	}
	go func() {
		page, err := c.lister.List(g.ctx, c.res, opts)
		pf.page <- fetched{page, err}
	}()
	return pf
}

// requestNext asks for the page at shard and cont ahead of its turn.
func (c *collector) requestNext(ra *readAhead, shard int, cont string) *prefetch {
	ra.gen.out.Add(1)
	return c.request(ra.gen, shard, cont)
}

// nextPage returns the page the progress points at: the read-ahead one
// when there is one, else a request made now, and the request already
// made for the page after it, if any. A read-ahead that failed drops
// what it requested in turn. An unreachable API server is retried here,
// with the reachability clock in the heartbeat.
func (c *collector) nextPage(ctx context.Context, ra *readAhead, pf *prefetch) (*kube.Page, *prefetch, error) {
	if pf != nil {
		f := <-pf.page
		pf.gen.out.Add(-1)
		if f.err == nil {
			next := pf.next.Load()
			if next != nil {
				// The room pf leaves may be what next waited for.
				next.askNext(c)
			}
			return f.page, next, nil
		}
		ra.drop()
		if !kube.IsUnreachable(f.err) {
			return nil, nil, fmt.Errorf("list %s: %w", c.gr, f.err)
		}
	}
	page, err := c.listPage(ctx)
	return page, nil, err
}

// following returns where the page after this one is: the same shard with
// its continue token, or the start of the next shard.
func (c *collector) following(page *kube.Page) (shard int, cont string, more bool) {
	return c.after(c.progress.Shard, page.Continue)
}

// after is where the page after one of shard with continue token token
// starts.
func (c *collector) after(shard int, token string) (int, string, bool) {
	switch {
	case token != "":
		return shard, token, true
	case shard+1 < len(c.shards):
		return shard + 1, "", true
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
	opts := c.listOptions(c.progress.Shard, c.progress.Continue)
	var page *kube.Page
	err := c.progress.Reachability.Do(ctx, c.in.Options.ClusterUnreachableTimeout.Duration, c.log, func() { c.heartbeat(ctx) }, func() error {
		var lerr error
		page, lerr = c.lister.List(ctx, c.res, opts)
		return lerr
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", c.gr, err)
	}
	return page, nil
}
