package backup

import (
	"slices"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// maxTypesPerCollect bounds the types one collect activity carries, and
// so its heartbeat, which holds each done type's outcome.
const maxTypesPerCollect = 32

// collectBatches groups resource types into the inputs of collect
// activities. An activity's round trip through Temporal costs more than
// listing an empty type, and most types of a namespace's backup are
// empty: small types share activities, collected one after another. A
// type estimated at a page or more gets an activity of its own, the
// largest first, so the longest lists start first and run side by side.
// The rest are dealt in turn into as many batches as collections run at
// once (more when a batch would exceed maxTypesPerCollect), so types of
// unknown size spread over them.
func collectBatches(types []v1alpha1.ResourceType, pageSize, concurrency int) [][]v1alpha1.ResourceType {
	var large, small []v1alpha1.ResourceType
	for _, t := range types {
		if t.Estimate >= pageSize {
			large = append(large, t)
		} else {
			small = append(small, t)
		}
	}
	slices.SortStableFunc(large, func(a, b v1alpha1.ResourceType) int { return b.Estimate - a.Estimate })
	batches := make([][]v1alpha1.ResourceType, 0, len(large)+concurrency)
	for _, t := range large {
		batches = append(batches, []v1alpha1.ResourceType{t})
	}
	if len(small) == 0 {
		return batches
	}
	n := max(min(concurrency, len(small)), (len(small)+maxTypesPerCollect-1)/maxTypesPerCollect)
	dealt := make([][]v1alpha1.ResourceType, n)
	for i, t := range small {
		dealt[i%n] = append(dealt[i%n], t)
	}
	return append(batches, dealt...)
}

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

// collectInputs are the inputs of the run's collect activities: a batch
// each, and with shared, a share each of the large types' namespaces
// (none when extensions act on items: a type's extension records are
// kept whole).
func (b *backupRun) collectInputs(plan *v1alpha1.PlanResult, shared bool) []v1alpha1.CollectInput {
	var inputs []v1alpha1.CollectInput
	for _, batch := range collectBatches(plan.Types, b.opts.PageSize, b.opts.Concurrency) {
		in := v1alpha1.CollectInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Types: batch, Options: b.opts, DryRun: b.dryRun}
		var shares []v1alpha1.NamespaceShare
		if shared && len(batch) == 1 && plan.Extensions == 0 {
			shares = namespaceShares(batch[0], b.opts.PageSize, b.opts.Concurrency)
		}
		if len(shares) == 0 {
			inputs = append(inputs, in)
			continue
		}
		if b.sharesLeft == nil {
			b.sharesLeft = map[string]int{}
		}
		b.sharesLeft[batch[0].GroupResource()] = len(shares)
		for i := range shares {
			in.Namespaces = &shares[i]
			inputs = append(inputs, in)
		}
	}
	return inputs
}
