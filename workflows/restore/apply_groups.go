package restore

import "github.com/cairn-backup/cairn/api/v1alpha1"

// An apply activity takes at most maxTypesPerApply types and, unless one
// type holds more, maxBatchesPerApply batches: its input and result stay
// small, and its duration about what one large type's was.
const (
	maxTypesPerApply   = 32
	maxBatchesPerApply = 50
)

// applyGroups splits the plan's types, in their order, into the groups one
// apply activity each takes. CRDs and claims stand alone: the restore
// waits for CRDs to serve after applying them, and for the claims'
// volumes before. A small namespace's restore is then a handful of
// activities, not one per type.
func applyGroups(types []v1alpha1.RestoreType) [][]v1alpha1.RestoreType {
	var groups [][]v1alpha1.RestoreType
	var group []v1alpha1.RestoreType
	batches := 0
	flush := func() {
		if len(group) > 0 {
			groups = append(groups, group)
		}
		group, batches = nil, 0
	}
	for _, t := range types {
		if gr := t.GroupResource(); gr == crdGroupResource || gr == claimsGroupResource {
			flush()
			groups = append(groups, []v1alpha1.RestoreType{t})
			continue
		}
		if len(group) == maxTypesPerApply || (len(group) > 0 && batches+t.Batches > maxBatchesPerApply) {
			flush()
		}
		group = append(group, t)
		batches += t.Batches
	}
	flush()
	return groups
}
