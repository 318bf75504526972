package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/workflows"
)

var (
	pvResource  = kube.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, Kind: "PersistentVolume"}
	crdResource = kube.Resource{GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
)

const relatedPageSize = 500

// CollectRelated stores the cluster-scoped objects that the collected
// namespaced ones need on restore: the PersistentVolumes bound to the
// collected claims and the CRDs of the collected custom resources. It is
// idempotent: parts are named by position in a sorted list of names.
func (a *Activities) CollectRelated(ctx context.Context, in workflows.CollectRelatedInput) (*workflows.CollectRelatedResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeLocation, err)
	}
	defer run.End()

	volumes, err := a.claimedVolumes(ctx, run)
	if err != nil {
		return nil, err
	}
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	result := &workflows.CollectRelatedResult{Resources: map[string]int{}}
	var reach Reachability
	timeout := in.Options.ClusterUnreachableTimeout.Duration
	heartbeat := func() { activity.RecordHeartbeat(ctx, reach) }
	fetch := func(r kube.Resource, names []string) error {
		var warnings []string
		var buf bytes.Buffer
		part, items := 0, 0
		flush := func() error {
			if buf.Len() == 0 {
				return nil
			}
			if err := run.Loc.WriteAll(ctx, run.Keys.Part(r.GroupResource(), 0, part), buf.Bytes()); err != nil {
				return err
			}
			part++
			buf.Reset()
			heartbeat()
			return nil
		}
		for _, name := range names {
			var it *kube.Item
			err := reach.Do(ctx, timeout, run.Log, heartbeat, func() error {
				var gerr error
				it, gerr = lister.Get(ctx, r, "", name)
				return gerr
			})
			switch {
			case apierrors.IsNotFound(err):
				msg := fmt.Sprintf("%s %s is referenced but does not exist", r.Kind, name)
				run.Log.Warn("Related object missing", zap.String("resource", r.GroupResource()), zap.String("name", name))
				warnings = append(warnings, msg)
				continue
			case apierrors.IsForbidden(err):
				// The run's identity may not read it: the backup goes on
				// without it, as the caller's kubectl would have to.
				run.Log.Warn("Related object not readable", zap.String("resource", r.GroupResource()), zap.String("name", name), zap.Error(err))
				warnings = append(warnings, fmt.Sprintf("%s %s is referenced but not readable: %v", r.Kind, name, err))
				continue
			}
			if err != nil {
				return fmt.Errorf("get %s %s: %w", r.GroupResource(), name, err)
			}
			buf.Write(it.Raw)
			buf.WriteByte('\n')
			items++
			if items%relatedPageSize == 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		result.Resources[r.GroupResource()] = items
		result.Warnings += len(warnings)
		return run.Loc.WriteJSON(ctx, run.Keys.TypeResult(r.GroupResource()), TypeResult{Resource: r.GroupResource(), Items: items, Warnings: warnings})
	}
	if err := fetch(pvResource, volumes); err != nil {
		return nil, err
	}
	crds := append([]string(nil), in.CustomResources...)
	sort.Strings(crds)
	if err := fetch(crdResource, crds); err != nil {
		return nil, err
	}
	run.Log.Info("Collected related cluster-scoped objects", zap.Int("persistentVolumes", result.Resources[pvResource.GroupResource()]),
		zap.Int("customResourceDefinitions", result.Resources[crdResource.GroupResource()]), zap.Int("warnings", result.Warnings))
	return result, nil
}

// claimedVolumes reads the collected claims and returns the sorted names
// of the volumes they are bound to.
func (a *Activities) claimedVolumes(ctx context.Context, run *runlog.Run) ([]string, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.PartsPrefix("persistentvolumeclaims"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var pvc struct {
				Spec struct {
					VolumeName string `json:"volumeName"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(line, &pvc); err != nil {
				return fmt.Errorf("decode claim in %s: %w", key, err)
			}
			if pvc.Spec.VolumeName != "" {
				seen[pvc.Spec.VolumeName] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
