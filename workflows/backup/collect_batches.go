package backup

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// maxTypesPerCollect bounds the types one collect activity carries, and
// so its heartbeat, which holds each done type's outcome (a few dozen
// bytes each): a cluster's small types fit in one.
const maxTypesPerCollect = 64

// maxTypesPerCollectBefore is the bound of the runs that started before
// versionSmallTypesFirst.
const maxTypesPerCollectBefore = 32

// collectBatches groups resource types into the inputs of collect
// activities, as the runs that started before versionSmallTypesFirst
// do. An activity's round trip through Temporal costs more than
// listing an empty type, and most types of a namespace's backup are
// empty: small types share activities, collected one after another. A
// type estimated at a page or more gets an activity of its own, the
// largest first, so the longest lists start first and run side by side.
// The rest are dealt in turn into as many batches as collections run at
// once (more when a batch would exceed maxTypesPerCollectBefore), so
// types of unknown size spread over them.
func collectBatches(types []v1alpha1.ResourceType, pageSize, concurrency int) [][]v1alpha1.ResourceType {
	large, small := bySize(types, pageSize)
	batches := make([][]v1alpha1.ResourceType, 0, len(large)+concurrency)
	for _, t := range large {
		batches = append(batches, []v1alpha1.ResourceType{t})
	}
	if len(small) == 0 {
		return batches
	}
	n := max(min(concurrency, len(small)), ceilDiv(len(small), maxTypesPerCollectBefore))
	return append(batches, deal(small, n)...)
}

// bySize splits types into those estimated at a page or more, the
// largest first, and the rest, in their order.
func bySize(types []v1alpha1.ResourceType, pageSize int) (large, small []v1alpha1.ResourceType) {
	for _, t := range types {
		if t.Estimate >= pageSize {
			large = append(large, t)
		} else {
			small = append(small, t)
		}
	}
	slices.SortStableFunc(large, func(a, b v1alpha1.ResourceType) int { return b.Estimate - a.Estimate })
	return large, small
}

// deal deals types in turn into n batches.
func deal(types []v1alpha1.ResourceType, n int) [][]v1alpha1.ResourceType {
	dealt := make([][]v1alpha1.ResourceType, n)
	for i, t := range types {
		dealt[i%n] = append(dealt[i%n], t)
	}
	return dealt
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// versionNamespaceShares marks the runs that collect a large type listed
// namespace by namespace in shares of its namespaces, side by side.
const versionNamespaceShares = "collect-namespace-shares"

// minSharePages is the least a share of namespaces lists, in pages (by
// the estimate): an activity's round trip through Temporal costs about
// as much as a page, so a share of fewer is not worth one of its own.
const minSharePages = 20

// namespaceShares splits a type listed namespace by namespace into up to
// concurrency shares of its namespaces, collected side by side: the API
// server answers several lists at once faster than one after another
// (two to four lists at once took 0.55-0.6 s where one took 0.9 s, for
// 40,000 ConfigMaps over 40 namespaces on the 2-core bench machine).
// Nil when the type is listed whole or too small to split.
func namespaceShares(t v1alpha1.ResourceType, pageSize, concurrency int) []v1alpha1.NamespaceShare {
	k := min(concurrency, t.ListedNamespaces, t.Estimate/(minSharePages*max(pageSize, 1)))
	if k < 2 {
		return nil
	}
	shares := make([]v1alpha1.NamespaceShare, k)
	for i := range shares {
		shares[i] = v1alpha1.NamespaceShare{Index: i, Of: k}
	}
	return shares
}

// versionSmallTypesFirst marks the runs that lay their collect
// activities out with collectLayout, the small types right after the
// largest type's activities: at version 1 in the slots the large ones
// leave free, at version 2 together, in as few activities as hold them.
// Version 2 came once collect activities listed their types side by side
// (an activity change, whatever a run's version): an activity fewer is a
// round trip through Temporal fewer, and a backup of 100 ConfigMaps took
// 0.23 s instead of 0.25 s (medians of 20 rounds).
const versionSmallTypesFirst = "collect-small-types-first"

// Versions of versionSmallTypesFirst.
const (
	smallTypesInFreeSlots workflow.Version = 1
	smallTypesTogether    workflow.Version = 2
)

// collectWork is what one collect activity does: collect a batch of
// types, or a share of one type's namespaces.
type collectWork struct {
	types []v1alpha1.ResourceType
	share *v1alpha1.NamespaceShare
}

// sharedWork is the work of collecting types: one activity, or one for
// each share of their namespaces.
func sharedWork(types []v1alpha1.ResourceType, shares []v1alpha1.NamespaceShare) []collectWork {
	if len(shares) == 0 {
		return []collectWork{{types: types}}
	}
	work := make([]collectWork, len(shares))
	for i := range shares {
		work[i] = collectWork{types: types, share: &shares[i]}
	}
	return work
}

// collectLayout lays types out into collect activities. A large type (a
// page or more) gets an activity, or with canShare a share of its
// namespaces each, as many as collections run at once: the shares keep
// the API server busy, and one share fewer, for the small types, made
// the 100,000 ConfigMaps of the bench 0.6 s slower to collect (one run
// each). The
// small types are dealt into the slots the large ones leave free, so
// that beside one large type listed whole every activity starts at once
// and the small lists use what its pages, read one after another, leave
// idle (at 10,000 ConfigMaps a fifth activity ended after the large
// list); with no slot free, into as many batches as collections run at
// once. The largest type's activities come first, then the small types'
// batches: short, and queued behind the other large lists they would
// end collection after them. Without fillFree, the small types go
// into as few batches as hold them instead.
func collectLayout(types []v1alpha1.ResourceType, pageSize, concurrency int, canShare, fillFree bool) []collectWork {
	large, small := bySize(types, pageSize)
	var work []collectWork
	largest := 0 // the activities of the largest type
	for i, t := range large {
		var shares []v1alpha1.NamespaceShare
		if canShare {
			shares = namespaceShares(t, pageSize, concurrency)
		}
		work = append(work, sharedWork([]v1alpha1.ResourceType{t}, shares)...)
		if i == 0 {
			largest = len(work)
		}
	}
	if len(small) == 0 {
		return work
	}
	n := ceilDiv(len(small), maxTypesPerCollect)
	if fillFree {
		free := concurrency - len(work)
		if free < 1 {
			free = concurrency
		}
		n = max(n, min(len(small), free))
	}
	batches := deal(small, n)
	out := make([]collectWork, 0, len(batches)+len(work))
	out = append(out, work[:largest]...)
	for _, b := range batches {
		out = append(out, collectWork{types: b})
	}
	return append(out, work[largest:]...)
}

// collectInputs are the inputs of the run's collect activities. With
// shared, a large type's namespaces may be split in shares (never when
// extensions act on items: a type's extension records are kept whole);
// from version smallTypesInFreeSlots of versionSmallTypesFirst on, they
// are laid out by collectLayout, else as the runs before it did.
func (b *backupRun) collectInputs(plan *v1alpha1.PlanResult, shared bool, layout workflow.Version) []v1alpha1.CollectInput {
	var work []collectWork
	if layout >= smallTypesInFreeSlots {
		work = collectLayout(plan.Types, b.opts.PageSize, b.opts.Concurrency, shared && plan.Extensions == 0, layout == smallTypesInFreeSlots)
	} else {
		work = b.collectWorkBefore(plan, shared)
	}
	inputs := make([]v1alpha1.CollectInput, 0, len(work))
	for _, w := range work {
		in := v1alpha1.CollectInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Types: w.types, Options: b.opts, DryRun: b.dryRun}
		if !b.dryRun {
			in.StartTime = b.status.StartTime
		}
		if w.share != nil {
			in.Namespaces = w.share
			if b.sharesLeft == nil {
				b.sharesLeft = map[string]int{}
			}
			b.sharesLeft[w.types[0].GroupResource()] = w.share.Of
		}
		inputs = append(inputs, in)
	}
	return inputs
}

// collectWorkBefore is the layout of the runs that started before
// versionSmallTypesFirst: collectBatches, and with shared, a share each
// of the large types' namespaces.
func (b *backupRun) collectWorkBefore(plan *v1alpha1.PlanResult, shared bool) []collectWork {
	var work []collectWork
	for _, batch := range collectBatches(plan.Types, b.opts.PageSize, b.opts.Concurrency) {
		var shares []v1alpha1.NamespaceShare
		if shared && len(batch) == 1 && plan.Extensions == 0 {
			shares = namespaceShares(batch[0], b.opts.PageSize, b.opts.Concurrency)
		}
		work = append(work, sharedWork(batch, shares)...)
	}
	return work
}
