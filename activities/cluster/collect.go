package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// TypeProgress is where the collection of one resource type stands.
type TypeProgress struct {
	Resource string `json:"resource"`
	// Shard is the index of the namespace being listed (0 for a
	// cluster-wide list), Part the next page number within it.
	Shard    int    `json:"shard"`
	Part     int    `json:"part"`
	Continue string `json:"continue,omitempty"`
	// Items stored in the parts before Part.
	Items    int `json:"items"`
	Parts    int `json:"parts"`
	Restarts int `json:"restarts,omitempty"`
	// Continuations counts the expired continue tokens the list went on
	// from with the API server's next one.
	Continuations int `json:"continuations,omitempty"`
	// Excluded are the objects an exclusion label kept out, the first
	// maxNamedExclusions of ExcludedTotal.
	Excluded      []ExcludedItem `json:"excluded,omitempty"`
	ExcludedTotal int            `json:"excludedTotal,omitempty"`
	// ItemErrors name the items an extension failed, the first
	// maxItemErrors of ItemErrorsTotal; they are left out of the backup.
	ItemErrors      []string `json:"itemErrors,omitempty"`
	ItemErrorsTotal int      `json:"itemErrorsTotal,omitempty"`
	// Operations counts the operations extensions started for the
	// stored items.
	Operations int `json:"operations,omitempty"`
	// Forbidden are the shards' namespaces ("" for a cluster-wide list)
	// the run's caller may not list, and the API server's first answer.
	Forbidden       []string `json:"forbidden,omitempty"`
	ForbiddenReason string   `json:"forbiddenReason,omitempty"`
	Reachability
}

// maxNamedExclusions bounds the excluded objects a type's result names
// (and its heartbeat carries); the rest are counted.
const maxNamedExclusions = 100

// ExcludedItem is an object an exclusion label kept out of a backup.
type ExcludedItem struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Label     string `json:"label"`
}

func (p *TypeProgress) exclude(it kube.Item, label string) {
	p.ExcludedTotal++
	if len(p.Excluded) < maxNamedExclusions {
		p.Excluded = append(p.Excluded, ExcludedItem{Namespace: it.Namespace, Name: it.Name, Label: label})
	}
}

// collectType collects the type at index i of the batch, which actions
// act on, from where the heartbeat left it (resumed, when it names the
// type), and stores its result for finalize.
func (b *batch) collectType(ctx context.Context, i int, t v1alpha1.ResourceType, actions []extcall.Action, resumed TypeProgress) (*v1alpha1.TypeCollected, error) {
	c := b.collector(i, t)
	if len(actions) > 0 && b.a.Extensions == nil {
		return nil, temporal.NewNonRetryableApplicationError("this worker cannot call extensions", v1alpha1.ErrTypeInvalidSpec, nil)
	}
	if len(actions) > 0 && b.in.Namespaces != nil {
		// A type's extension records are dropped whole when its listing
		// starts over: its shares would drop each other's.
		return nil, temporal.NewNonRetryableApplicationError("a type extensions act on is collected by one activity, not by shares of its namespaces",
			v1alpha1.ErrTypeInvalidSpec, nil)
	}
	c.actions = actions
	if t.Empty && len(c.shards) == 1 && c.shards[0] == "" {
		// The plan listed the whole type and found nothing: that list
		// was its collection.
		c.log.Info("Collected", zap.Int("items", 0), zap.Bool("emptyWhenPlanned", true))
		return &v1alpha1.TypeCollected{Resource: c.gr}, nil
	}
	if resumed.Resource == c.gr {
		c.progress = resumed
		c.log.Info("Resuming collection", zap.Int("shard", resumed.Shard), zap.Int("part", resumed.Part), zap.Int("items", resumed.Items))
	} else {
		c.progress = TypeProgress{Resource: c.gr}
		c.log.Info("Collecting")
	}
	res, err := c.collect(ctx)
	if err != nil {
		return nil, err
	}
	p := &c.progress
	tr := TypeResult{Resource: c.gr, Items: res.Items, Excluded: p.Excluded, ExcludedTotal: p.ExcludedTotal}
	if res.Error != "" {
		tr.Errors = []string{res.Error}
	}
	tr.Errors = append(tr.Errors, p.ItemErrors...)
	if more := p.ItemErrorsTotal - len(p.ItemErrors); more > 0 {
		tr.Errors = append(tr.Errors, fmt.Sprintf("and %d more items extensions failed", more))
	}
	if p.Continuations > 0 {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf("listing %s outlived etcd's compaction %d times and went on from where it was: "+
			"objects changed while it was listed may be missing or at a later state than the rest", c.gr, p.Continuations))
	}
	key := b.run.Keys.TypeResult(c.gr)
	if s := b.in.Namespaces; s != nil {
		key = b.run.Keys.ShareTypeResult(c.gr, s.Index, s.Of)
	}
	if err := StoreTypeResult(ctx, b.run, key, tr); err != nil {
		return nil, err
	}
	c.log.Info("Collected", zap.Int("items", res.Items), zap.Int("parts", res.Parts), zap.Int("restarts", res.Restarts))
	return res, nil
}

// collector lists one resource type, the batch's index-th.
type collector struct {
	*batch
	index  int
	res    kube.Resource
	gr     string
	log    *zap.Logger
	shards []string
	// shardIndex is, when the activity lists a share of the plan's
	// namespaces, the index in the plan of each of shards: parts are
	// named by it.
	shardIndex []int
	isNSType   bool
	// actions are the extensions that act on the type's items, and
	// pending the pages listed that wait for them.
	actions []extcall.Action
	pending pendingPages
	// progress is where the type stands; durable is, while pages wait
	// for extensions, its progress before the first of them: what a
	// heartbeat may promise is stored.
	progress TypeProgress
	durable  *TypeProgress
	// earlier are the parts an earlier attempt stored that this one has
	// not stored again yet (earlier_parts.go).
	earlier map[string]bool
}

func (b *batch) collector(i int, t v1alpha1.ResourceType) *collector {
	c := &collector{
		batch: b,
		index: i,
		res: kube.Resource{
			GVR:        schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource},
			Kind:       t.Kind,
			Namespaced: t.Namespaced,
		},
		gr:       t.GroupResource(),
		log:      b.run.Log.With(zap.String("resource", t.GroupResource())),
		isNSType: t.GroupResource() == "namespaces",
		shards:   []string{""},
	}
	if b.plan.listsByNamespace(t) {
		c.shards = b.plan.Namespaces
		if b.plan.AllNamespaces {
			c.log.Info("Listing namespace by namespace", zap.Int("estimate", t.Estimate), zap.Int("namespaces", len(c.shards)))
		}
	}
	if s := b.in.Namespaces; s != nil {
		c.shards, c.shardIndex = shareOf(c.shards, *s)
		c.log.Info("Listing a share of the namespaces", zap.Int("share", s.Index), zap.Int("of", s.Of), zap.Int("namespaces", len(c.shards)))
	}
	return c
}

// heartbeat records where the type stands in the batch's heartbeat.
func (c *collector) heartbeat(ctx context.Context) {
	p := c.progress
	if c.durable != nil {
		// The pages held since are not stored; how long the API server
		// has been out of reach is current all the same.
		reach := p.Reachability
		p = *c.durable
		p.Reachability = reach
	}
	c.beat(ctx, c.index, &p)
}

// shareOf is the share of shards s names, and the index of each in
// shards. A type listed whole belongs to share 0.
func shareOf(shards []string, s v1alpha1.NamespaceShare) ([]string, []int) {
	if len(shards) == 1 && shards[0] == "" {
		if s.Index == 0 {
			return shards, []int{0}
		}
		return nil, nil
	}
	var share []string
	var index []int
	for i := s.Index; s.Of > 0 && i >= 0 && i < len(shards); i += s.Of {
		share, index = append(share, shards[i]), append(index, i)
	}
	return share, index
}

// partShard is the index in the plan of the namespace shards[i] lists,
// which names its parts.
func (c *collector) partShard(i int) int {
	if c.shardIndex == nil {
		return i
	}
	return c.shardIndex[i]
}

// ListsByNamespace says whether a whole-cluster backup lists a namespaced
// type of estimate objects namespace by namespace rather than
// cluster-wide. Every page of a list makes etcd count the objects left in
// its range, so a cluster-wide list costs the square of the type's size:
// on the 2-core bench machine 100,000 ConfigMaps over 100 namespaces took
// 6.8 s cluster-wide and 2.3 s namespace by namespace, 200,000 took 26 s
// and 6 s, and a million outlived etcd's compaction (its continue token
// expired). Namespace by namespace costs a request per namespace instead,
// so it wins once estimate² exceeds namespaces × byNamespaceBreakEven
// (about 20,000 objects over 100 namespaces). Each namespace is then a
// consistent snapshot of its own, and a namespace created after the plan
// is not listed, as in a backup that names its namespaces.
func ListsByNamespace(estimate, namespaces int) bool {
	return namespaces > 0 && float64(estimate)*float64(estimate) >= float64(namespaces)*byNamespaceBreakEven
}

// byNamespaceBreakEven is where the two costs meet: a cluster-wide list
// counts estimate²/(2 × page size) objects at about 0.65 µs each, and a
// namespace's request costs about 2 ms, so 2 × 500 × 2 ms / 0.65 µs,
// rounded up.
const byNamespaceBreakEven = 4e6

// continuation is the continue token an expiry answer carries for going
// on from the same object without a consistent snapshot; "" when none.
func continuation(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return ""
	}
	return st.Status().Continue
}

func (c *collector) collect(ctx context.Context) (*v1alpha1.TypeCollected, error) {
	p := &c.progress
	if err := c.noteEarlierParts(ctx); err != nil {
		return nil, err
	}
	ra := newReadAhead(ctx)
	defer func() { ra.gen.cancel() }()
	var ahead *prefetch
	for p.Shard < len(c.shards) {
		page, early, err := c.nextPage(ctx, ra, ahead)
		ahead = nil
		switch {
		case err == nil:
		case (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && continuation(err) != "":
			// The continue token outlived etcd's compaction, and the API
			// server offers to go on from the same object at its latest
			// state. Listing again from the start would meet the same
			// compaction if the type takes longer to list than etcd keeps
			// revisions; going on stores no object twice.
			c.log.Warn("Continue token expired, going on from the same object", zap.Error(err))
			p.Continue = continuation(err)
			p.Continuations++
			c.heartbeat(ctx)
			continue
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			// The continue token outlived etcd's compaction: list the type
			// again from the start, dropping what was stored, so no object
			// is stored twice.
			c.log.Warn("Continue token expired, listing the type again", zap.Error(err))
			// With them go what extensions answered for their items.
			for _, prefix := range c.storedPrefixes() {
				if derr := c.run.Loc.DeletePrefix(ctx, prefix, nil); derr != nil {
					return nil, derr
				}
			}
			c.pending, c.durable, c.earlier = pendingPages{}, nil, nil
			*p = TypeProgress{Resource: c.gr, Restarts: p.Restarts + 1}
			c.heartbeat(ctx)
			continue
		case c.actingAsCaller && apierrors.IsForbidden(err):
			if err := c.flush(ctx); err != nil {
				return nil, err
			}
			c.forbid(ctx, err)
			continue
		case kube.IsTypeLevel(err):
			if err := c.flush(ctx); err != nil {
				return nil, err
			}
			if err := c.removeEarlierParts(ctx); err != nil {
				return nil, err
			}
			return &v1alpha1.TypeCollected{Resource: c.gr, Items: p.Items, Parts: p.Parts, Error: err.Error(), Restarts: p.Restarts,
				ItemErrors: p.ItemErrorsTotal, Operations: p.Operations}, nil
		default:
			return nil, err
		}
		// The next request goes out while this page is stored, unless the
		// worker is told to spare the API server; it may have gone out
		// already, while this page was read.
		shard, cont, more := c.following(page)
		switch {
		case early != nil:
			ahead = early
		case more && c.a.PageInterval <= 0:
			ahead = c.requestNext(ra, shard, cont)
		}

		if len(c.pending.keys) == 0 && len(c.actions) > 0 {
			before := *p
			c.durable = &before
		}
		listed := len(page.Items)
		kept := c.select_(page, p)
		lines := page.Lines
		if len(kept) < listed {
			lines = nil
		}
		c.pending.add(c.run.Keys.Part(c.gr, c.partShard(p.Shard), p.Part), kept, lines, len(c.actions) > 0)
		p.Part++
		p.Continue = page.Continue
		if p.Continue == "" {
			p.Shard, p.Part = p.Shard+1, 0
		}
		if len(c.actions) == 0 || c.pending.bytes >= pendingBytes || !more {
			if err := c.flush(ctx); err != nil {
				return nil, err
			}
		}
		if err := clock.Sleep(ctx, c.a.PageInterval); err != nil {
			return nil, err
		}
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	if err := c.removeEarlierParts(ctx); err != nil {
		return nil, err
	}
	return &v1alpha1.TypeCollected{Resource: c.gr, Items: p.Items, Parts: p.Parts, Restarts: p.Restarts, Skipped: c.skipReason(),
		ItemErrors: p.ItemErrorsTotal, Operations: p.Operations}, nil
}

// storedPrefixes hold what this activity stored of its type: the whole
// type's parts and extension records, or the parts of its namespaces
// when it lists a share of them (shares have no extensions).
func (c *collector) storedPrefixes() []string {
	if c.in.Namespaces == nil {
		return []string{c.run.Keys.PartsPrefix(c.gr), c.run.Keys.SegmentsOf(c.gr), c.run.Keys.AdditionalRefsOf(c.gr),
			c.run.Keys.ExtensionOperationsOf(c.gr)}
	}
	prefixes := make([]string, 0, 2*len(c.shards))
	for i := range c.shards {
		prefixes = append(prefixes, c.run.Keys.ShardParts(c.gr, c.partShard(i)), c.run.Keys.ShardSegments(c.gr, c.partShard(i)))
	}
	return prefixes
}

// flush stores the pending pages, as the type's extensions answered for
// their items, and records them in the heartbeat.
func (c *collector) flush(ctx context.Context) error {
	if len(c.pending.keys) == 0 {
		return nil
	}
	pages := c.pending.items
	if len(c.actions) > 0 {
		extended, err := c.extend(ctx, c.pending.items)
		if err != nil {
			return err
		}
		for i, items := range extended {
			if err := c.storeExtensionRecords(ctx, c.pending.keys[i], items); err != nil {
				return err
			}
			pages[i] = pages[i][:0]
			for _, it := range items {
				pages[i] = append(pages[i], it.Item)
				c.progress.Operations += len(it.operations)
			}
		}
	}
	p := &c.progress
	for i, key := range c.pending.keys {
		// A page left with no items is not stored; what an earlier
		// attempt stored under its name goes once the type is done
		// (removeEarlierParts).
		if len(pages[i]) > 0 {
			data := c.pending.lines[i]
			if data == nil || len(c.actions) > 0 {
				data = joinLines(pages[i])
			}
			if err := c.run.Loc.WriteAll(ctx, key, data); err != nil {
				return err
			}
			if err := c.storeSegment(ctx, key, pages[i]); err != nil {
				return err
			}
			c.storedAgain(key)
			p.Parts++
		}
		p.Items += len(pages[i])
	}
	c.pending, c.durable = pendingPages{}, nil
	c.heartbeat(ctx)
	return nil
}

// pendingPages are pages listed and not stored yet: with extensions, a
// type's pages are sent to them together, up to pendingBytes of items.
type pendingPages struct {
	keys  []string
	items [][]kube.Item
	// lines are a page's items as the part stores them, when the page
	// kept them all (nil when not): stored as they are, not joined again.
	lines [][]byte
	bytes int
}

// add holds a page; counting its bytes is only for pages that wait on
// extensions, so a backup without them pays nothing per item.
func (pp *pendingPages) add(key string, items []kube.Item, lines []byte, count bool) {
	pp.keys, pp.items, pp.lines = append(pp.keys, key), append(pp.items, items), append(pp.lines, lines)
	for i := 0; count && i < len(items); i++ {
		pp.bytes += len(items[i].Raw)
	}
}

// pendingBytes is how much of a type's items wait for its extensions
// before they are sent: several calls' worth, made at once.
const pendingBytes = maxCallsInFlight * extension.MaxBatchBytes

// forbid records that the caller may not list the current shard and
// moves on to the next one: the backup holds what the caller could read.
func (c *collector) forbid(ctx context.Context, err error) {
	p := &c.progress
	c.log.Warn("The run's caller may not list this type here", zap.String("namespace", c.shards[p.Shard]), zap.Error(err))
	p.Forbidden = append(p.Forbidden, c.shards[p.Shard])
	if p.ForbiddenReason == "" {
		p.ForbiddenReason = err.Error()
	}
	p.Shard, p.Part, p.Continue = p.Shard+1, 0, ""
	c.heartbeat(ctx)
}

// skipReason says where the caller may not list the type, with the API
// server's answer; "" when it could list it everywhere.
func (c *collector) skipReason() string {
	p := c.progress
	if len(p.Forbidden) == 0 {
		return ""
	}
	where := "cluster-wide"
	if p.Forbidden[0] != "" {
		where = "in namespaces " + strings.Join(p.Forbidden, ", ")
	}
	return fmt.Sprintf("%s may not list %s %s: %s", c.in.Options.ActingAs.Username, c.gr, where, p.ForbiddenReason)
}

// select_ keeps the page's items the spec selects, and records in p
// those an exclusion label keeps out.
func (c *collector) select_(page *kube.Page, p *TypeProgress) []kube.Item {
	kept := page.Items[:0]
	for _, it := range page.Items {
		if !c.selected(it) {
			continue
		}
		if label := filter.ExcludedBy(it.Labels); label != "" {
			p.exclude(it, label)
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

// joinLines stores items as JSON lines.
func joinLines(items []kube.Item) []byte {
	n := 0
	for _, it := range items {
		n += len(it.Raw) + 1
	}
	buf := make([]byte, 0, n)
	for _, it := range items {
		buf = append(buf, it.Raw...)
		buf = append(buf, '\n')
	}
	return buf
}

// selected reports whether the spec's filters select it.
func (c *collector) selected(it kube.Item) bool {
	switch {
	case c.isNSType:
		// Namespace objects follow the namespace filter, not labels, so
		// a restore can recreate the namespaces it restores into.
		return c.nsGlobs.Match(it.Name)
	case c.res.Namespaced && !c.nsGlobs.Match(it.Namespace):
		return false
	}
	return c.labels.Match(it.Labels)
}
