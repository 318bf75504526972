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
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	resolve := a.resolver(plan)
	res := &v1alpha1.CollectAdditionalResult{Resources: map[string]int{}}
	var warnings []string
	var reach Reachability
	beat := func() { activity.RecordHeartbeat(ctx, reach) }
	for _, gr := range slices.Sorted(maps.Keys(wanted)) {
		refs := wanted[gr]
		r, ok, err := resolve(gr)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			warnings = append(warnings, fmt.Sprintf("extensions asked for %d %s, a type the cluster does not serve", len(refs), gr))
			continue
		}
		if err := dropStored(ctx, run, gr, refs); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		part := 0
		for _, key := range slices.Sorted(maps.Keys(refs)) {
			ref := refs[key]
			if r.Namespaced != (ref.Namespace != "") {
				warnings = append(warnings, fmt.Sprintf("extensions asked for %s %s: the type is namespaced only when the item has a namespace", gr, key))
				continue
			}
			var it *kube.Item
			err := reach.Do(ctx, in.Options.ClusterUnreachableTimeout.Duration, run.Log, beat, func() error {
				var gerr error
				it, gerr = lister.Get(ctx, r, ref.Namespace, ref.Name)
				return gerr
			})
			switch {
			case apierrors.IsNotFound(err):
				warnings = append(warnings, fmt.Sprintf("extensions asked for %s %s, which does not exist", gr, key))
				continue
			case apierrors.IsForbidden(err):
				warnings = append(warnings, fmt.Sprintf("extensions asked for %s %s, which the backup may not read: %v", gr, key, err))
				continue
			case isRefusal(err):
				warnings = append(warnings, fmt.Sprintf("extensions asked for %s %s, which the API server refuses to read: %v", gr, key, err))
				continue
			case err != nil:
				return nil, fmt.Errorf("get %s %s: %w", gr, key, err)
			case filter.ExcludedBy(it.Labels) != "":
				warnings = append(warnings, fmt.Sprintf("extensions asked for %s %s, labelled %s=true: left out", gr, key, filter.ExcludedBy(it.Labels)))
				continue
			}
			buf.Write(it.Raw)
			buf.WriteByte('\n')
			res.Resources[gr]++
			if res.Resources[gr]%relatedPageSize == 0 {
				if err := run.Loc.WriteAll(ctx, run.Keys.AdditionalPart(gr, part), buf.Bytes()); err != nil {
					return nil, err
				}
				part++
				buf.Reset()
				beat()
			}
		}
		if buf.Len() > 0 {
			if err := run.Loc.WriteAll(ctx, run.Keys.AdditionalPart(gr, part), buf.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	res.Warnings = len(warnings)
	if err := run.Loc.WriteJSON(ctx, run.Keys.TypeResult(additionalResultKey), TypeResult{Warnings: warnings}); err != nil {
		return nil, err
	}
	return res, nil
}

// additionalRefs reads what extensions asked for, by type and then by
// "namespace/name", each once.
func additionalRefs(ctx context.Context, run *runlog.Run) (map[string]map[string]extension.ObjectRef, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.AllAdditionalRefs())
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]extension.ObjectRef{}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var r extension.ObjectRef
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}.String()
			if out[gr] == nil {
				out[gr] = map[string]extension.ObjectRef{}
			}
			out[gr][refKey(r.Namespace, r.Name)] = r
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
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
