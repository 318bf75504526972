package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// additionalResultKey is where CollectAdditional's warnings go, beside
// the types' results; no group-resource has this name.
const additionalResultKey = "_additional"

// CollectAdditional stores the additional items extensions asked for
// with the collected ones, read as the run's identity: each once, and
// none the backup already holds (collected with its type, or as a
// related object). It is idempotent: each type's additional parts are
// written again, in sorted order, by every attempt.
func (a *Activities) CollectAdditional(ctx context.Context, in v1alpha1.CollectAdditionalInput) (*v1alpha1.CollectAdditionalResult, error) {
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()
	wanted, err := additionalRefs(ctx, run)
	if err != nil {
		return nil, err
	}
	stored, warnings, err := a.storeObjects(ctx, run, plan, objectsToStore{
		refs: wanted, actingAs: in.Options.ActingAs, unreachable: in.Options.ClusterUnreachableTimeout.Duration,
		asker: "extensions", part: run.Keys.AdditionalPart,
		before: func(gr string, refs map[string]extension.ObjectRef) error { return dropStored(ctx, run, gr, refs) },
	})
	if err != nil {
		return nil, err
	}
	if err := StoreTypeResult(ctx, run, run.Keys.TypeResult(additionalResultKey), TypeResult{Warnings: warnings}); err != nil {
		return nil, err
	}
	return &v1alpha1.CollectAdditionalResult{Resources: stored, Warnings: len(warnings)}, nil
}

// objectsToStore are objects to read by reference and store in parts of
// their own: refs by group-resource and "namespace/name", read as
// actingAs, who asked for them (for warnings), where each type's parts go,
// and a step to run on a type's refs before they are read.
type objectsToStore struct {
	refs        map[string]map[string]extension.ObjectRef
	actingAs    *v1alpha1.Identity
	unreachable time.Duration
	asker       string
	part        func(groupResource string, index int) string
	before      func(groupResource string, refs map[string]extension.ObjectRef) error
}

// storeObjects reads the objects o names, each once, in sorted order, and
// stores them; it counts them per type. One that is gone, forbidden, of
// a type the cluster does not serve, or labelled to be excluded is a
// warning.
func (a *Activities) storeObjects(ctx context.Context, run *runlog.Run, plan *StoredPlan, o objectsToStore) (map[string]int, []string, error) {
	lister, err := actas.Lister(a.Clients, a.Lister, o.actingAs)
	if err != nil {
		return nil, nil, err
	}
	resolve := a.resolver(plan)
	stored := map[string]int{}
	var warnings []string
	var reach Reachability
	beat := func() { activity.RecordHeartbeat(ctx, reach) }
	for _, gr := range slices.Sorted(maps.Keys(o.refs)) {
		refs := o.refs[gr]
		r, ok, err := resolve(gr)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok:
			warnings = append(warnings, fmt.Sprintf("%s asked for %d %s, a type the cluster does not serve", o.asker, len(refs), gr))
			continue
		}
		if o.before != nil {
			if err := o.before(gr, refs); err != nil {
				return nil, nil, err
			}
		}
		var buf bytes.Buffer
		part := 0
		for _, key := range slices.Sorted(maps.Keys(refs)) {
			ref := refs[key]
			if r.Namespaced != (ref.Namespace != "") {
				warnings = append(warnings, fmt.Sprintf("%s asked for %s %s: the type is namespaced only when the item has a namespace", o.asker, gr, key))
				continue
			}
			var it *kube.Item
			err := reach.Do(ctx, o.unreachable, run.Log, beat, func() error {
				var gerr error
				it, gerr = lister.Get(ctx, r, ref.Namespace, ref.Name)
				return gerr
			})
			switch {
			case apierrors.IsNotFound(err):
				warnings = append(warnings, fmt.Sprintf("%s asked for %s %s, which does not exist", o.asker, gr, key))
				continue
			case apierrors.IsForbidden(err):
				warnings = append(warnings, fmt.Sprintf("%s asked for %s %s, which the backup may not read: %v", o.asker, gr, key, err))
				continue
			case isRefusal(err):
				warnings = append(warnings, fmt.Sprintf("%s asked for %s %s, which the API server refuses to read: %v", o.asker, gr, key, err))
				continue
			case err != nil:
				return nil, nil, fmt.Errorf("get %s %s: %w", gr, key, err)
			case filter.ExcludedBy(it.Labels) != "":
				warnings = append(warnings, fmt.Sprintf("%s asked for %s %s, labelled %s=true: left out", o.asker, gr, key, filter.ExcludedBy(it.Labels)))
				continue
			}
			buf.Write(it.Raw)
			buf.WriteByte('\n')
			stored[gr]++
			if stored[gr]%relatedPageSize == 0 {
				if err := run.Loc.WriteAll(ctx, o.part(gr, part), buf.Bytes()); err != nil {
					return nil, nil, err
				}
				part++
				buf.Reset()
				beat()
			}
		}
		if buf.Len() > 0 {
			if err := run.Loc.WriteAll(ctx, o.part(gr, part), buf.Bytes()); err != nil {
				return nil, nil, err
			}
		}
	}
	return stored, warnings, nil
}

// additionalRefs reads what extensions asked for, by type and then by
// "namespace/name", each once.
func additionalRefs(ctx context.Context, run *runlog.Run) (refSet, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.AllAdditionalRefs())
	if err != nil {
		return nil, err
	}
	out := refSet{}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var r extension.ObjectRef
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			out.add(r)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refSet holds object references by group-resource, then by
// "namespace/name", each once.
type refSet map[string]map[string]extension.ObjectRef

func (s refSet) add(r extension.ObjectRef) {
	gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}.String()
	if s[gr] == nil {
		s[gr] = map[string]extension.ObjectRef{}
	}
	s[gr][refKey(r.Namespace, r.Name)] = r
}

func refKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// dropStored removes from refs the objects the type's parts already hold,
// and the additional parts an earlier attempt wrote.
func dropStored(ctx context.Context, run *runlog.Run, gr string, refs map[string]extension.ObjectRef) error {
	additional := strings.TrimSuffix(run.Keys.AdditionalPart(gr, 0), "000000.jsonl")
	if err := run.Loc.DeletePrefix(ctx, additional, nil); err != nil {
		return err
	}
	keys, err := run.Loc.Keys(ctx, run.Keys.PartsPrefix(gr))
	if err != nil {
		return err
	}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			head := gjson.GetManyBytes(line, "metadata.namespace", "metadata.name")
			delete(refs, refKey(head[0].String(), head[1].String()))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// resolver finds a type by its group-resource: the plan's types first,
// then the cluster's discovery, asked once.
func (a *Activities) resolver(plan *StoredPlan) func(gr string) (kube.Resource, bool, error) {
	known := map[string]kube.Resource{}
	for _, t := range plan.Types {
		known[t.GroupResource()] = kube.Resource{GVR: schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource},
			Kind: t.Kind, Namespaced: t.Namespaced}
	}
	discovered := false
	return func(gr string) (kube.Resource, bool, error) {
		if r, ok := known[gr]; ok || discovered {
			return r, ok, nil
		}
		resources, _, err := kube.Discover(a.Clients.Discovery)
		if err != nil {
			return kube.Resource{}, false, err
		}
		discovered = true
		for _, r := range resources {
			if _, ok := known[r.GroupResource()]; !ok {
				known[r.GroupResource()] = r
			}
		}
		r, ok := known[gr]
		return r, ok, nil
	}
}

// isRefusal reports an API server's answer that asking again will not
// change (a 4xx other than not found and forbidden): one asked-for item's
// problem, not the step's.
func isRefusal(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != 429
}
