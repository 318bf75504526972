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
