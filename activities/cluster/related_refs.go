package cluster

import (
	"context"

	"github.com/tidwall/gjson"

	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// referencedObjects reads the collected objects of the types that may
// name cluster-scoped ones and returns those names per group-resource.
func referencedObjects(ctx context.Context, run *runlog.Run) (map[string]map[string]bool, error) {
	refs := map[string]map[string]bool{}
	err := eachPart(ctx, run, objects.ReferencingTypes(), func(gr string, line []byte) {
		for _, ref := range objects.References(gr, line) {
			if refs[ref.Resource] == nil {
				refs[ref.Resource] = map[string]bool{}
			}
			refs[ref.Resource][ref.Name] = true
		}
	})
	return refs, err
}

// collectedServiceAccounts are the service accounts the backup holds, as
// "namespace/name".
func collectedServiceAccounts(ctx context.Context, run *runlog.Run) (map[string]bool, error) {
	keys := map[string]bool{}
	err := eachPart(ctx, run, []string{"serviceaccounts"}, func(_ string, line []byte) {
		f := gjson.GetManyBytes(line, "metadata.namespace", "metadata.name")
		keys[f[0].String()+"/"+f[1].String()] = true
	})
	return keys, err
}

// eachPart calls fn with every collected object of the types.
func eachPart(ctx context.Context, run *runlog.Run, types []string, fn func(gr string, line []byte)) error {
	for _, gr := range types {
		keys, err := run.Loc.Keys(ctx, run.Keys.PartsPrefix(gr))
		if err != nil {
			return err
		}
		for _, key := range keys {
			err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
				fn(gr, line)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
