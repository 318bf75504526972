package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/objects"
)

// A restore of one namespace from a backup holding more than it needs
// takes only the cluster-scoped objects that namespace's objects name,
// the bindings of its service accounts and the roles those bind; a
// storage class the restore maps away is left out. They are created only
// where missing.
func TestRestoreTakesOnlyTheRelatedObjectsOfItsNamespaces(t *testing.T) {
	idx, err := scanFiles(t, map[string]string{
		"resources/deployments.apps/namespaces/team-a/web.json": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-a"},` +
			`"spec":{"template":{"spec":{"priorityClassName":"team-high","runtimeClassName":"sandboxed"}}}}`,
		"resources/persistentvolumeclaims/namespaces/team-a/data.json": `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"team-a"},` +
			`"spec":{"storageClassName":"fast"}}`,
		"resources/persistentvolumeclaims/namespaces/team-a/logs.json": `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"logs","namespace":"team-a"},` +
			`"spec":{"storageClassName":"old"}}`,
		"resources/rolebindings.rbac.authorization.k8s.io/namespaces/team-a/ed.json": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",` +
			`"metadata":{"name":"ed","namespace":"team-a"},"roleRef":{"kind":"ClusterRole","name":"team-editor"}}`,
		"resources/serviceaccounts/namespaces/team-a/app.json": `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"app","namespace":"team-a"}}`,
		"resources/deployments.apps/namespaces/team-b/other.json": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other","namespace":"team-b"},` +
			`"spec":{"template":{"spec":{"priorityClassName":"b-high"}}}}`,
		"resources/clusterrolebindings.rbac.authorization.k8s.io/cluster/a-reader.json": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",` +
			`"metadata":{"name":"a-reader"},"roleRef":{"kind":"ClusterRole","name":"node-reader"},"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"team-a"}]}`,
		"resources/clusterrolebindings.rbac.authorization.k8s.io/cluster/b-reader.json": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",` +
			`"metadata":{"name":"b-reader"},"roleRef":{"kind":"ClusterRole","name":"b-role"},"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"team-b"}]}`,
	})
	require.NoError(t, err)
	sel, err := newSelection(v1alpha1.RestoreSpec{Name: "r", BackupName: "b", IncludedNamespaces: []string{"team-a"}}.WithDefaults(""))
	require.NoError(t, err)
	p := &restorePlan{storageClasses: map[string]string{"old": "standard"}}

	restored := func(gr, name string) bool {
		obj := &unstructured.Unstructured{}
		obj.SetName(name)
		return relatedClusterItem(gr, obj, idx, p, sel)
	}
	for _, c := range []struct{ gr, name string }{
		{objects.ClusterRoleBindingsResource, "a-reader"}, {objects.ClusterRolesResource, "node-reader"},
		{objects.ClusterRolesResource, "team-editor"}, {objects.PriorityClassesResource, "team-high"},
		{objects.RuntimeClassesResource, "sandboxed"}, {objects.StorageClassesResource, "fast"},
	} {
		assert.True(t, restored(c.gr, c.name), "%s %s is restored", c.gr, c.name)
	}
	for _, c := range []struct{ gr, name string }{
		{objects.ClusterRoleBindingsResource, "b-reader"}, {objects.ClusterRolesResource, "b-role"},
		{objects.PriorityClassesResource, "b-high"}, {objects.StorageClassesResource, "old"},
		{objects.IngressClassesResource, "nginx"},
	} {
		assert.False(t, restored(c.gr, c.name), "%s %s is not restored", c.gr, c.name)
	}
	assert.True(t, sel.clusterType(objects.PriorityClassesResource), "auto mode plans the type, judging items")
	assert.True(t, createOnly(objects.ClusterRolesResource, p, sel), "a namespace restore never changes a role its namespaces bind")
	assert.False(t, createOnly("configmaps", p, sel))

	all, err := newSelection(v1alpha1.RestoreSpec{Name: "r", BackupName: "b"}.WithDefaults(""))
	require.NoError(t, err)
	assert.True(t, relatedClusterItem(objects.ClusterRolesResource, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "b-role"}}}, idx, p, all),
		"a whole-cluster restore restores every object")
	assert.False(t, createOnly(objects.ClusterRolesResource, p, all), "a whole-cluster restore of a whole-cluster backup follows the policy")
	p.relatedByReference = true
	assert.True(t, createOnly(objects.ClusterRolesResource, p, all), "a namespace backup's related object is created only where missing")
}

// A restore that selects pods' owners by label still restores the
// PriorityClass they name, which carries no such label.
func TestLabelledRestoreKeepsWhatItsObjectsNeed(t *testing.T) {
	spec := v1alpha1.RestoreSpec{Name: "r", BackupName: "b", IncludedNamespaces: []string{"team-a"}, LabelSelector: "app=web"}
	idx, err := scanFilesWith(t, map[string]string{
		"resources/deployments.apps/namespaces/team-a/web.json": `{"apiVersion":"apps/v1","kind":"Deployment",` +
			`"metadata":{"name":"web","namespace":"team-a","labels":{"app":"web"}},"spec":{"template":{"spec":{"priorityClassName":"team-high"}}}}`,
		"resources/priorityclasses.scheduling.k8s.io/cluster/team-high.json": `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",` +
			`"metadata":{"name":"team-high","uid":"u1"},"value":10}`,
	}, spec)
	require.NoError(t, err)
	sel, err := newSelection(spec.WithDefaults(""))
	require.NoError(t, err)
	assert.Equal(t, 1, idx.types[objects.PriorityClassesResource].selected, "the class is selected whatever its labels")
	assert.True(t, sel.itemOrRelated(objects.PriorityClassesResource, "", "team-high", nil))
	assert.False(t, sel.itemOrRelated("configmaps", "team-a", "x", nil), "a namespaced object still needs the label")
	assert.True(t, idx.references[objects.PriorityClassesResource]["team-high"])
}
