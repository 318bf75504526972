package cluster

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/runlog"
)

var (
	pvResource  = kube.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, Kind: "PersistentVolume"}
	crdResource = kube.Resource{GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
	// dependencyResources are the types of objects.WorkloadDependencies.
	dependencyResources = map[string]kube.Resource{
		objects.ClusterRoleBindingsResource: {GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, Kind: "ClusterRoleBinding"},
		objects.ClusterRolesResource:        {GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole"},
		objects.StorageClassesResource:      {GVR: schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}, Kind: "StorageClass"},
		objects.PriorityClassesResource:     {GVR: schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}, Kind: "PriorityClass"},
		objects.RuntimeClassesResource:      {GVR: schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}, Kind: "RuntimeClass"},
		objects.IngressClassesResource:      {GVR: schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}, Kind: "IngressClass"},
	}
)

const relatedPageSize = 500

// CollectRelated stores the cluster-scoped objects that the collected
// namespaced ones need on restore: the PersistentVolumes bound to the
// collected claims, the CRDs of the collected custom resources and,
// unless the spec turns it off, what the workloads need to run in
// another cluster (the ClusterRoleBindings of the namespaces' service
// accounts, the ClusterRoles bound, the classes objects name). It is
// idempotent: parts are named by position in a sorted list of names.
func (a *Activities) CollectRelated(ctx context.Context, in v1alpha1.CollectRelatedInput) (*v1alpha1.CollectRelatedResult, error) {
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()

	refs, err := referencedObjects(ctx, run)
	if err != nil {
		return nil, err
	}
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	c := &relatedCollector{run: run, lister: lister, timeout: in.Options.ClusterUnreachableTimeout.Duration,
		result: &v1alpha1.CollectRelatedResult{Resources: map[string]int{}}}
	c.heartbeat = func() { activity.RecordHeartbeat(ctx, c.reach) }

	if err := c.fetch(ctx, pvResource, sortedNames(refs[objects.PersistentVolumesResource]), nil); err != nil {
		return nil, err
	}
	crds := append([]string(nil), in.CustomResources...)
	sort.Strings(crds)
	if err := c.fetch(ctx, crdResource, crds, nil); err != nil {
		return nil, err
	}
	if plan.Spec.TakesWorkloadDependencies() {
		resources, err := filter.NewGlobs(plan.Spec.IncludedResources, plan.Spec.ExcludedResources)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
		}
		accounts, err := collectedServiceAccounts(ctx, run)
		if err != nil {
			return nil, err
		}
		if err := c.workloadDependencies(ctx, accounts, refs, resources); err != nil {
			return nil, err
		}
	}
	run.Log.Info("Collected related cluster-scoped objects", zap.Any("resources", c.result.Resources), zap.Int("warnings", c.result.Warnings))
	return c.result, nil
}

// workloadDependencies stores the ClusterRoleBindings naming a service
// account the backup holds, then the ClusterRoles they and the
// namespaces' RoleBindings bind, then the classes objects name: each
// type the spec's resource filters select.
func (c *relatedCollector) workloadDependencies(ctx context.Context, accounts map[string]bool, refs map[string]map[string]bool, resources filter.Globs) error {
	crbs := dependencyResources[objects.ClusterRoleBindingsResource]
	bindings, warning := map[string]bool{}, ""
	if crbs.Match(resources) && len(accounts) > 0 {
		var err error
		if bindings, warning, err = c.bindingsOf(ctx, crbs, accounts); err != nil {
			return err
		}
	}
	roles := refs[objects.ClusterRolesResource]
	if roles == nil {
		roles = map[string]bool{}
	}
	bound := func(it *kube.Item) {
		if role := objects.BoundClusterRole(it.Raw); role != "" {
			roles[role] = true
		}
	}
	var warnings []string
	if warning != "" {
		warnings = []string{warning}
	}
	if err := c.fetchWith(ctx, crbs, sortedNames(bindings), bound, warnings); err != nil {
		return err
	}
	refs[objects.ClusterRolesResource] = roles
	for _, gr := range objects.WorkloadDependencies[1:] {
		if r := dependencyResources[gr]; r.Match(resources) {
			if err := c.fetch(ctx, r, sortedNames(refs[gr]), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// bindingsOf names the ClusterRoleBindings with one of the service
// accounts as a subject. A caller who may not list them gets a warning
// and a backup without them.
func (c *relatedCollector) bindingsOf(ctx context.Context, crbs kube.Resource, accounts map[string]bool) (map[string]bool, string, error) {
	names := map[string]bool{}
	next := ""
	for {
		var page *kube.Page
		err := c.reach.Do(ctx, c.timeout, c.run.Log, c.heartbeat, func() error {
			var lerr error
			page, lerr = c.lister.List(ctx, crbs, kube.ListOptions{Limit: relatedPageSize, Continue: next})
			return lerr
		})
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			c.run.Log.Warn("ClusterRoleBindings not listable", zap.Error(err))
			return nil, fmt.Sprintf("the ClusterRoleBindings of the namespaces' service accounts are not taken: %v", err), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("list clusterrolebindings: %w", err)
		}
		for _, it := range page.Items {
			for _, sa := range objects.ServiceAccountSubjects(it.Raw) {
				if accounts[sa] {
					names[it.Name] = true
				}
			}
		}
		if next = page.Continue; next == "" {
			return names, "", nil
		}
		c.heartbeat()
	}
}

// relatedCollector fetches related objects by name and stores them.
type relatedCollector struct {
	run       *runlog.Run
	lister    kube.Lister
	timeout   time.Duration
	reach     Reachability
	heartbeat func()
	result    *v1alpha1.CollectRelatedResult
}

// fetch stores the named objects of r, calling seen (if set) with each.
func (c *relatedCollector) fetch(ctx context.Context, r kube.Resource, names []string, seen func(*kube.Item)) error {
	return c.fetchWith(ctx, r, names, seen, nil)
}

// fetchWith is fetch that records warnings found before it as the
// type's own.
func (c *relatedCollector) fetchWith(ctx context.Context, r kube.Resource, names []string, seen func(*kube.Item), warnings []string) error {
	// What an earlier attempt stored goes first: a list read live may
	// name fewer objects now, and its parts would outlive it.
	for _, prefix := range []string{c.run.Keys.PartsPrefix(r.GroupResource()), c.run.Keys.SegmentsOf(r.GroupResource())} {
		if err := c.run.Loc.DeletePrefix(ctx, prefix, func(int) { c.heartbeat() }); err != nil {
			return err
		}
	}
	if err := c.run.Loc.Delete(ctx, c.run.Keys.TypeResult(r.GroupResource())); err != nil {
		return err
	}
	var buf bytes.Buffer
	part, items := 0, 0
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		if err := c.run.Loc.WriteAll(ctx, c.run.Keys.Part(r.GroupResource(), 0, part), buf.Bytes()); err != nil {
			return err
		}
		part++
		buf.Reset()
		c.heartbeat()
		return nil
	}
	for _, name := range names {
		var it *kube.Item
		err := c.reach.Do(ctx, c.timeout, c.run.Log, c.heartbeat, func() error {
			var gerr error
			it, gerr = c.lister.Get(ctx, r, "", name)
			return gerr
		})
		switch {
		case apierrors.IsNotFound(err):
			c.run.Log.Warn("Related object missing", zap.String("resource", r.GroupResource()), zap.String("name", name))
			warnings = append(warnings, fmt.Sprintf("%s %s is referenced but does not exist", r.Kind, name))
			continue
		case apierrors.IsForbidden(err):
			// The run's identity may not read it: the backup goes on
			// without it, as the caller's kubectl would have to.
			c.run.Log.Warn("Related object not readable", zap.String("resource", r.GroupResource()), zap.String("name", name), zap.Error(err))
			warnings = append(warnings, fmt.Sprintf("%s %s is referenced but not readable: %v", r.Kind, name, err))
			continue
		case err != nil:
			return fmt.Errorf("get %s %s: %w", r.GroupResource(), name, err)
		}
		if seen != nil {
			seen(it)
		}
		buf.Write(it.Raw)
		buf.WriteByte('\n')
		if items++; items%relatedPageSize == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if len(names) == 0 && len(warnings) == 0 {
		return nil
	}
	c.result.Resources[r.GroupResource()] = items
	c.result.Warnings += len(warnings)
	return StoreTypeResult(ctx, c.run, c.run.Keys.TypeResult(r.GroupResource()), TypeResult{Resource: r.GroupResource(), Items: items, Warnings: warnings})
}

func sortedNames(set map[string]bool) []string { return slices.Sorted(maps.Keys(set)) }
