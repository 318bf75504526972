package cluster

import (
	"context"

	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/objects"
)

// referencedObjects reads the collected objects of the types that may
// name cluster-scoped ones and returns those names per group-resource.
func referencedObjects(ctx context.Context, run *runlog.Run) (map[string]map[string]bool, error) {
	refs := map[string]map[string]bool{}
	for _, gr := range objects.ReferencingTypes() {
		keys, err := run.Loc.Keys(ctx, run.Keys.PartsPrefix(gr))
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
				for _, ref := range objects.References(gr, line) {
					if refs[ref.Resource] == nil {
						refs[ref.Resource] = map[string]bool{}
					}
					refs[ref.Resource][ref.Name] = true
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return refs, nil
}
