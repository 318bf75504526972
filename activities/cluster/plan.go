package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// StoredPlan is the plan object in the location: what collection needs
// and would be too big for a workflow payload (the namespace list).
type StoredPlan struct {
	Spec v1alpha1.BackupSpec `json:"spec"`
	// AllNamespaces: namespaced types are listed cluster-wide and filtered
	// by the namespace globs; otherwise one list per namespace.
	AllNamespaces bool                    `json:"allNamespaces"`
	Namespaces    []string                `json:"namespaces"`
	Types         []v1alpha1.ResourceType `json:"types"`
	// Extensions are those registered when the backup was planned: one
	// run calls one set throughout.
	Extensions []v1alpha1.Extension `json:"extensions,omitempty"`
}

// StartWithPlan starts the run log of a step that works from a backup's
// stored plan, and reads the plan; End the run when done.
func StartWithPlan(ctx context.Context, locs *location.Opener, log *zap.Logger, backup, locationURL string) (*runlog.Run, *StoredPlan, error) {
	run, err := runlog.Start(ctx, locs, log, backup, locationURL)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	var plan StoredPlan
	if err := run.Loc.ReadJSON(ctx, run.Keys.Plan(), &plan); err != nil {
		run.End()
		return nil, nil, fmt.Errorf("read plan: %w", err)
	}
	return run, &plan, nil
}

// listsByNamespace says whether collection lists t one namespace at a
// time: the plan names its namespaces, or the type is too large for one
// cluster-wide list (ListsByNamespace).
func (p StoredPlan) listsByNamespace(t v1alpha1.ResourceType) bool {
	return t.Namespaced && (!p.AllNamespaces || ListsByNamespace(t.Estimate, len(p.Namespaces)))
}

// Plans reports whether the plan collects the core resource type.
func (p StoredPlan) Plans(resource string) bool {
	for _, t := range p.Types {
		if t.Group == "" && t.Resource == resource {
			return true
		}
	}
	return false
}

// Selection is how the plan selects namespaced objects: by label, by
// namespace glob, listed in namespaces (metav1.NamespaceAll: all of them,
// filtered by the globs). A bad selector is a non-retryable InvalidSpec.
func (p StoredPlan) Selection() (filter.Labels, filter.Globs, []string, error) {
	labels, err := filter.NewLabels(p.Spec.LabelSelector, p.Spec.OrLabelSelectors)
	if err != nil {
		return filter.Labels{}, filter.Globs{}, nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	globs, err := filter.NewGlobs(p.Spec.IncludedNamespaces, p.Spec.ExcludedNamespaces)
	if err != nil {
		return filter.Labels{}, filter.Globs{}, nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	if p.AllNamespaces {
		return labels, globs, []string{metav1.NamespaceAll}, nil
	}
	return labels, globs, p.Namespaces, nil
}

// PlanBackup discovers what the spec selects and writes the plan.
func (a *Activities) PlanBackup(ctx context.Context, in v1alpha1.PlanInput) (*v1alpha1.PlanResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Spec.Name, in.Spec.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()

	if err := in.Spec.Validate(); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	var reach Reachability
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &reach)
	}
	heartbeat := func() { activity.RecordHeartbeat(ctx, reach) }
	timeout := in.Options.ClusterUnreachableTimeout.Duration

	var (
		plan   *StoredPlan
		result *v1alpha1.PlanResult
	)
	err = reach.Do(ctx, timeout, run.Log, heartbeat, func() error {
		var perr error
		plan, result, perr = a.plan(ctx, in, run.Log)
		return perr
	})
	if err != nil {
		var invalid *v1alpha1.InvalidSpecError
		if errors.As(err, &invalid) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
		}
		return nil, err
	}
	if err := run.Loc.WriteJSON(ctx, run.Keys.Plan(), plan); err != nil {
		return nil, err
	}
	run.Log.Info("Planned backup",
		zap.Int("resourceTypes", len(result.Types)), zap.Int("namespaces", result.Namespaces),
		zap.Int("skippedTypes", len(result.Skipped)), zap.Bool("collectRelated", result.CollectRelated))
	return result, nil
}

func (a *Activities) plan(ctx context.Context, in v1alpha1.PlanInput, log *zap.Logger) (*StoredPlan, *v1alpha1.PlanResult, error) {
	spec := in.Spec
	nsGlobs, _ := filter.NewGlobs(spec.IncludedNamespaces, spec.ExcludedNamespaces)

	clients, err := actas.Clients(a.Clients, in.Options.ActingAs)
	if err != nil {
		return nil, nil, err
	}
	if who := in.Options.ActingAs; who != nil {
		if err := authorizeBackup(ctx, clients.Config, spec, who.Username); err != nil {
			return nil, nil, err
		}
	}
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, nil, err
	}
	// The server's version and the namespaces are asked for while
	// discovery and the estimates go on: the plan of a small backup waits
	// on round trips to the API server, not on work.
	var (
		version    *version.Info
		namespaces []string
	)
	side, sideCtx := errgroup.WithContext(ctx)
	side.Go(func() (err error) {
		if version, err = kube.ServerVersion(sideCtx, clients.Discovery); err != nil {
			return fmt.Errorf("server version: %w", err)
		}
		return nil
	})
	side.Go(func() (err error) {
		namespaces, err = selectNamespaces(sideCtx, lister, nsGlobs, spec.IncludedNamespaces)
		return err
	})
	result := &v1alpha1.PlanResult{Extensions: len(a.Registered)}
	typesErr := planTypes(ctx, clients.Discovery, lister, spec, result)
	if err := cmp.Or(typesErr, side.Wait()); err != nil {
		return nil, nil, err
	}
	result.KubernetesVersion, result.Namespaces = version.GitVersion, len(namespaces)
	for _, ns := range spec.IncludedNamespaces {
		if !filter.IsGlob(ns) && !contains(namespaces, ns) {
			log.Warn("Included namespace does not exist", zap.String("namespace", ns))
		}
	}
	allNamespaces := includesAllNamespaces(spec.IncludedNamespaces)
	sort.Slice(result.Skipped, func(i, j int) bool { return result.Skipped[i].Resource < result.Skipped[j].Resource })
	result.CollectRelated = spec.ClusterResources == v1alpha1.ClusterResourcesAuto && !spec.WholeCluster()

	plan := &StoredPlan{Spec: spec, AllNamespaces: allNamespaces, Namespaces: namespaces, Types: result.Types, Extensions: a.Registered}
	for i, t := range result.Types {
		if plan.listsByNamespace(t) {
			result.Types[i].ListedNamespaces = len(namespaces)
		}
	}
	return plan, result, nil
}

// planTypes discovers the types the spec selects into result, with an
// estimate of each one's size when every namespace is backed up, and
// the types skipped and why.
func planTypes(ctx context.Context, disc discovery.DiscoveryInterface, lister kube.Lister, spec v1alpha1.BackupSpec, result *v1alpha1.PlanResult) error {
	resGlobs, _ := filter.NewGlobs(spec.IncludedResources, spec.ExcludedResources)
	labelSel, _ := filter.NewLabels(spec.LabelSelector, spec.OrLabelSelectors)
	resources, failedGroups, err := kube.Discover(disc)
	if err != nil {
		return err
	}
	if unknown := kube.UnknownResources(resources, append(append([]string{}, spec.IncludedResources...), spec.ExcludedResources...)); len(unknown) > 0 {
		return &v1alpha1.InvalidSpecError{Problems: []string{fmt.Sprintf("unknown resources %v: the cluster serves no such type", unknown)}}
	}
	for gv, gerr := range failedGroups {
		result.Skipped = append(result.Skipped, v1alpha1.SkippedResource{Resource: gv, Reason: "discovery failed: " + gerr.Error()})
	}
	allNamespaces := includesAllNamespaces(spec.IncludedNamespaces)
	fullCluster := spec.WholeCluster()
	var estimated []int // indexes in result.Types of the types to estimate
	var estimatedRes []kube.Resource
	for _, r := range resources {
		gr := r.GroupResource()
		if !r.Match(resGlobs) {
			continue
		}
		if reason := kube.SkipReason(r); reason != "" {
			result.Skipped = append(result.Skipped, v1alpha1.SkippedResource{Resource: gr, Reason: reason})
			continue
		}
		isNamespaceType := gr == "namespaces"
		if !r.Namespaced && !isNamespaceType && !fullCluster {
			continue // cluster-scoped: only related objects, or none
		}
		t := v1alpha1.ResourceType{Group: r.GVR.Group, Version: r.GVR.Version, Resource: r.GVR.Resource, Kind: r.Kind, Namespaced: r.Namespaced}
		if allNamespaces && labelSel.Empty() && !isNamespaceType {
			estimated = append(estimated, len(result.Types))
			estimatedRes = append(estimatedRes, r)
		}
		result.Types = append(result.Types, t)
	}
	for i, e := range estimateAll(ctx, lister, estimatedRes) {
		result.Types[estimated[i]].Estimate, result.Types[estimated[i]].Empty = e.count, e.empty
	}
	return nil
}

// estimateParallel bounds the estimates asked for at once. Each answer
// is tiny, so a request's time is mostly its round trip, and the plan of
// a small backup waits for all of a cluster's 50: 8 at once took 50-90 ms
// on the 2-core bench machine. With 24 the backup of 100 ConfigMaps took
// a median 0.26 s against 0.28 s, a gain about the size of the noise.
const estimateParallel = 24

// typeEstimate is what the plan's list of a type told: about how many
// objects it holds, and whether the list found none at all.
type typeEstimate struct {
	count int
	empty bool
}

// estimateAll estimates each resource, estimateParallel at once: a whole
// cluster's 45 types cost a few round trips to the API server, not 45 in
// a row.
func estimateAll(ctx context.Context, lister kube.Lister, resources []kube.Resource) []typeEstimate {
	estimates := make([]typeEstimate, len(resources))
	g := new(errgroup.Group)
	g.SetLimit(estimateParallel)
	for i, r := range resources {
		g.Go(func() error {
			estimates[i] = estimate(ctx, lister, r)
			return nil
		})
	}
	_ = g.Wait() // estimates never fail: an error is an unknown estimate
	return estimates
}

// estimate asks for one item to learn how many the type holds; a failure
// only means the estimate is unknown, and not that the type is empty.
func estimate(ctx context.Context, lister kube.Lister, r kube.Resource) typeEstimate {
	page, err := lister.List(ctx, r, kube.ListOptions{Limit: 1})
	if err != nil {
		return typeEstimate{}
	}
	n := len(page.Items) + int(page.Remaining)
	return typeEstimate{count: n, empty: n == 0 && page.Continue == ""}
}

// selectNamespaces resolves the namespace filter. A caller who may not
// list namespaces (a team's account, bound only inside its namespaces)
// can still back up namespaces it names one by one: those are taken as
// named, and what the caller may read in them decides the rest.
func selectNamespaces(ctx context.Context, lister kube.Lister, globs filter.Globs, included []string) ([]string, error) {
	namespaces, err := kube.SelectNamespaces(ctx, lister, globs)
	if err == nil || !apierrors.IsForbidden(err) {
		return namespaces, err
	}
	named := make([]string, 0, len(included))
	for _, ns := range included {
		if filter.IsGlob(ns) {
			msg := fmt.Sprintf("%v; without the right to list namespaces, name each namespace instead of %q", err, ns)
			return nil, &v1alpha1.InvalidSpecError{Problems: []string{msg}}
		}
		if globs.Match(ns) {
			named = append(named, ns)
		}
	}
	sort.Strings(named)
	return slices.Compact(named), nil
}

func includesAllNamespaces(included []string) bool {
	return len(included) == 0 || contains(included, "*")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
