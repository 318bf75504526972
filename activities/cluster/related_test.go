package cluster

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/objects"
)

// objectLister serves cluster-scoped objects by group-resource and name;
// a group-resource in forbidden answers 403 to a list.
type objectLister struct {
	objects   map[string]map[string]string
	forbidden map[string]bool
}

func (l *objectLister) List(_ context.Context, r kube.Resource, _ kube.ListOptions) (*kube.Page, error) {
	if l.forbidden[r.GroupResource()] {
		return nil, apierrors.NewForbidden(schema.GroupResource{Group: r.GVR.Group, Resource: r.GVR.Resource}, "", nil)
	}
	page := &kube.Page{}
	for name, raw := range l.objects[r.GroupResource()] {
		page.Items = append(page.Items, kube.Item{Name: name, Raw: []byte(raw)})
	}
	return page, nil
}

func (l *objectLister) Get(_ context.Context, r kube.Resource, _, name string) (*kube.Item, error) {
	raw, ok := l.objects[r.GroupResource()][name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: r.GVR.Group, Resource: r.GVR.Resource}, name)
	}
	return &kube.Item{Name: name, Raw: []byte(raw)}, nil
}

func named(name string) string { return `{"metadata":{"name":"` + name + `"}}` }

// collectRelated stores the given namespaced parts for a backup of
// namespace shop with spec, runs CollectRelated over lister and returns
// what it counted and the names stored per type.
func collectRelated(t *testing.T, spec v1alpha1.BackupSpec, lister kube.Lister, parts map[string]string) (*v1alpha1.CollectRelatedResult, map[string][]string) {
	t.Helper()
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	spec = spec.WithDefaults(locURL)
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Backup(spec.Name)
	require.NoError(t, loc.WriteJSON(ctx, keys.Plan(), StoredPlan{Spec: spec, Namespaces: []string{"shop"}}))
	for gr, lines := range parts {
		require.NoError(t, loc.WriteAll(ctx, keys.Part(gr, 0, 0), []byte(lines+"\n")))
	}
	acts := &Activities{Lister: lister, Log: zap.NewNop()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts.CollectRelated)
	val, err := env.ExecuteActivity(acts.CollectRelated, v1alpha1.CollectRelatedInput{Backup: spec.Name, Location: locURL,
		Options: v1alpha1.BackupOptions{}.WithDefaults()})
	require.NoError(t, err)
	var res v1alpha1.CollectRelatedResult
	require.NoError(t, val.Get(&res))
	stored := map[string][]string{}
	for gr := range res.Resources {
		partKeys, err := loc.Keys(ctx, keys.PartsPrefix(gr))
		require.NoError(t, err)
		for _, k := range partKeys {
			require.NoError(t, loc.ReadLines(ctx, k, func(line []byte) error {
				var obj struct{ Metadata struct{ Name string } }
				require.NoError(t, json.Unmarshal(line, &obj))
				stored[gr] = append(stored[gr], obj.Metadata.Name)
				return nil
			}))
		}
	}
	return &res, stored
}

var shopParts = map[string]string{
	"deployments.apps":           `{"metadata":{"name":"web","namespace":"shop"},"spec":{"template":{"spec":{"priorityClassName":"shop-high"}}}}`,
	objects.RoleBindingsResource: `{"metadata":{"name":"ed","namespace":"shop"},"roleRef":{"kind":"ClusterRole","name":"shop-editor"}}`,
	objects.ClaimsResource:       `{"metadata":{"name":"data","namespace":"shop"},"spec":{"storageClassName":"gone"}}`,
	"serviceaccounts":            `{"metadata":{"name":"app","namespace":"shop"}}`,
}

func shopCluster() *objectLister {
	return &objectLister{objects: map[string]map[string]string{
		objects.PriorityClassesResource: {"shop-high": named("shop-high"), "other-high": named("other-high")},
		objects.ClusterRolesResource:    {"shop-editor": named("shop-editor"), "node-reader": named("node-reader"), "other-role": named("other-role")},
		objects.ClusterRoleBindingsResource: {
			"shop-nodes":  `{"metadata":{"name":"shop-nodes"},"roleRef":{"kind":"ClusterRole","name":"node-reader"},"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"shop"}]}`,
			"other-nodes": `{"metadata":{"name":"other-nodes"},"roleRef":{"kind":"ClusterRole","name":"other-role"},"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"other"}]}`,
			// An account of the namespace the backup does not hold (a
			// label selector left it out) does not bring its binding.
			"shop-ci": `{"metadata":{"name":"shop-ci"},"roleRef":{"kind":"ClusterRole","name":"other-role"},"subjects":[{"kind":"ServiceAccount","name":"ci","namespace":"shop"}]}`,
		},
	}}
}

func TestCollectRelatedTakesWhatTheNamespacesNeed(t *testing.T) {
	res, stored := collectRelated(t, v1alpha1.BackupSpec{Name: "b", IncludedNamespaces: []string{"shop"}}, shopCluster(), shopParts)
	assert.Equal(t, []string{"shop-high"}, stored[objects.PriorityClassesResource])
	assert.Equal(t, []string{"shop-nodes"}, stored[objects.ClusterRoleBindingsResource])
	assert.ElementsMatch(t, []string{"node-reader", "shop-editor"}, stored[objects.ClusterRolesResource])
	n, ok := res.Resources[objects.StorageClassesResource]
	assert.True(t, ok && n == 0, "the missing class is a warning, not an object")
	assert.Equal(t, 1, res.Warnings, "StorageClass gone is referenced but does not exist")
}

func TestCollectRelatedFollowsFiltersAndRights(t *testing.T) {
	off := false
	res, _ := collectRelated(t, v1alpha1.BackupSpec{Name: "b", IncludedNamespaces: []string{"shop"}, RelatedClusterResources: &off},
		shopCluster(), shopParts)
	assert.Empty(t, res.Resources, "turned off, only volumes and CRDs are related")

	_, stored := collectRelated(t, v1alpha1.BackupSpec{Name: "b", IncludedNamespaces: []string{"shop"},
		ExcludedResources: []string{"priorityclasses.scheduling.k8s.io"}}, shopCluster(), shopParts)
	assert.Empty(t, stored[objects.PriorityClassesResource], "an excluded type is not taken as related")
	assert.NotEmpty(t, stored[objects.ClusterRolesResource])

	lister := shopCluster()
	lister.forbidden = map[string]bool{objects.ClusterRoleBindingsResource: true}
	res, stored = collectRelated(t, v1alpha1.BackupSpec{Name: "b", IncludedNamespaces: []string{"shop"}}, lister, shopParts)
	assert.Empty(t, stored[objects.ClusterRoleBindingsResource])
	assert.Equal(t, []string{"shop-editor"}, stored[objects.ClusterRolesResource], "roles of the RoleBindings are still taken")
	assert.Equal(t, 2, res.Warnings, "bindings not listable, and the missing class")
}
