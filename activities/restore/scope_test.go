package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/tarball"
)

const crb = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"mine","namespace":"team-a"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`

func scanFiles(t *testing.T, files map[string]string) (*backupIndex, error) {
	t.Helper()
	return scanFilesWith(t, files, v1alpha1.RestoreSpec{Name: "r", BackupName: "b", IncludedNamespaces: []string{"team-a"}})
}

// scanFilesWith scans a tarball of files for a restore of spec.
func scanFilesWith(t *testing.T, files map[string]string, spec v1alpha1.RestoreSpec) (*backupIndex, error) {
	t.Helper()
	src := tarballSource{loc: openTempLocation(t), key: "b/b.tar.gz"}
	files["metadata/version"] = tarball.FormatVersion
	writeTarball(t, src, files)
	sel, err := newSelection(spec.WithDefaults(""))
	require.NoError(t, err)
	return scanBackup(context.Background(), src, sel)
}

// A crafted backup that stores a ClusterRoleBinding under a namespace's
// path, to pass it off as that namespace's object, is corrupt: the
// target cluster's discovery says the type is cluster-scoped.
func TestClusterScopedTypeUnderANamespaceIsCorrupt(t *testing.T) {
	idx, err := scanFiles(t, map[string]string{
		"resources/clusterrolebindings.rbac.authorization.k8s.io/namespaces/team-a/mine.json": crb,
	})
	require.NoError(t, err)
	target := &targetAPI{preferred: map[string]kube.Resource{"clusterrolebindings.rbac.authorization.k8s.io": {
		GVR:  schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		Kind: "ClusterRoleBinding", Namespaced: false}}}
	err = target.checkScopes(idx)
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeCorruptBackup)
	require.ErrorContains(t, err, "clusterrolebindings.rbac.authorization.k8s.io is cluster-scoped in the cluster, but the backup stores it as namespaced")

	target.preferred["clusterrolebindings.rbac.authorization.k8s.io"] = kube.Resource{Namespaced: true}
	require.NoError(t, target.checkScopes(idx), "a type the cluster serves namespaced passes")
}

// An object whose own namespace differs from its path's, or a type
// stored at both scopes, is corrupt.
func TestObjectsThatDisagreeWithTheirPathAreCorrupt(t *testing.T) {
	_, err := scanFiles(t, map[string]string{
		"resources/configmaps/namespaces/team-a/a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"kube-system"}}`,
	})
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeCorruptBackup)
	require.ErrorContains(t, err, `its metadata.namespace "kube-system" differs from its path's "team-a"`)

	_, err = scanFiles(t, map[string]string{
		"resources/configmaps/namespaces/team-a/a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"team-a"}}`,
		"resources/configmaps/cluster/b.json":           `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
	})
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeCorruptBackup)
	require.ErrorContains(t, err, "stored both in namespaces and cluster-wide")
}
