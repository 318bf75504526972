package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sample"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/tests/fixtures/velero"
)

// veleroShop is a Velero backup of namespace vshop: a ConfigMap, one the
// API server rejects (an invalid data key), and a HorizontalPodAutoscaler
// whose source preferred autoscaling/v2beta2, which Kubernetes 1.35 no
// longer serves, with the v2 and v1 copies Velero's API group versions
// feature keeps.
func veleroShop(name string) velero.Backup {
	hpa := func(version string, extra string) []byte {
		return []byte(`{"apiVersion":"autoscaling/` + version + `","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","namespace":"vshop",
			"uid":"h1","resourceVersion":"5"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
			"minReplicas":1,"maxReplicas":3` + extra + `}}`)
	}
	metrics := `,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]`
	return velero.Backup{Name: name, IncludedNamespaces: []string{"vshop"}, Objects: []velero.Object{
		{GroupResource: "namespaces", Name: "vshop", Preferred: "v1", Versions: map[string][]byte{
			"v1": []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"vshop","uid":"n1"}}`)}},
		{GroupResource: "configmaps", Namespace: "vshop", Name: "settings", Preferred: "v1", Versions: map[string][]byte{
			"v1": []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"vshop","uid":"c1"},"data":{"mode":"velero"}}`)}},
		{GroupResource: "configmaps", Namespace: "vshop", Name: "bad", Preferred: "v1", Versions: map[string][]byte{
			"v1": []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","namespace":"vshop","uid":"c2"},"data":{"not a key!":"x"}}`)}},
		{GroupResource: "horizontalpodautoscalers.autoscaling", Namespace: "vshop", Name: "web", Preferred: "v2beta2", Versions: map[string][]byte{
			"v2beta2": hpa("v2beta2", metrics), "v2": hpa("v2", metrics), "v1": hpa("v1", `,"targetCPUUtilizationPercentage":80`)}},
		v1Object("services", "web", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"vshop","uid":"s1"},
			"spec":{"clusterIP":"10.96.7.7","clusterIPs":["10.96.7.7"],"selector":{"app":"web"},"ports":[{"port":80,"protocol":"TCP"}]}}`),
		v1Object("endpoints", "web", `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web","namespace":"vshop","uid":"e1"},
			"subsets":[{"addresses":[{"ip":"10.244.0.9"}],"ports":[{"port":80}]}]}`),
		{GroupResource: "deployments.apps", Namespace: "vshop", Name: "web", Preferred: "v1", Versions: map[string][]byte{"v1": []byte(
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"vshop","uid":"d1"},"spec":{"replicas":1,` +
				`"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
				`"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)}},
		{GroupResource: "replicasets.apps", Namespace: "vshop", Name: "web-5d4", Preferred: "v1", Versions: map[string][]byte{"v1": []byte(
			`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-5d4","namespace":"vshop","uid":"rs1",` +
				`"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d1","controller":true}]},` +
				`"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
				`"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)}},
		v1Object("pods", "web-5d4-x7k", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-5d4-x7k","namespace":"vshop","uid":"p1",
			"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d4","uid":"rs1","controller":true}]},
			"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`),
	}}
}

func v1Object(groupResource, name, js string) velero.Object {
	return velero.Object{GroupResource: groupResource, Namespace: "vshop", Name: name, Preferred: "v1", Versions: map[string][]byte{"v1": []byte(js)}}
}

// TestRestoreFromOtherSources restores a Velero backup (choosing a version
// the cluster serves, listing the item the API server rejects), refuses
// unknown and running backups, fails clearly on a corrupt tarball, and
// restores a cairn backup into a second cluster that shares the location.
func TestRestoreFromOtherSources(t *testing.T) {
	t.Parallel()
	// Its own cluster: the sample seeds the cluster-wide Widget CRD.
	s := newStack(t)
	s.startWorker("--page-interval", "300ms")
	ctx := context.Background()
	require.NoError(t, velero.Write(ctx, s.location, veleroShop("velero-shop")))

	t.Run("velero backup", func(t *testing.T) {
		list, err := s.starter.ListBackups(ctx)
		require.NoError(t, err)
		var found *starter.BackupView
		for _, v := range list.Items {
			if v.Name == "velero-shop" {
				found = v
			}
		}
		require.NotNil(t, found, "the Velero backup is listed")
		assert.Equal(t, v1alpha1.BackupFormatVelero, found.Format)
		assert.Equal(t, v1alpha1.PhaseCompleted, found.Phase)

		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "from-velero", BackupName: "velero-shop"}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "the rejected ConfigMap makes it PartiallyFailed")
		assert.Equal(t, v1alpha1.BackupFormatVelero, v.Status.BackupFormat)
		o := s.outcomes("from-velero")
		bad := o["configmaps vshop/bad"]
		assert.Equal(t, v1alpha1.ItemFailed, bad.Result)
		assert.Contains(t, bad.Reason, "not a key!", "the server's reason names the field")
		assert.Equal(t, v1alpha1.ItemRestored, o["configmaps vshop/settings"].Result)
		assert.Equal(t, v1alpha1.ItemRestored, o["horizontalpodautoscalers.autoscaling vshop/web"].Result)
		assert.Equal(t, 1, v.Status.ItemsFailed)

		// What the cluster's controllers recreate is left to them.
		assert.Equal(t, v1alpha1.ItemRestored, o["deployments.apps vshop/web"].Result)
		assert.Equal(t, v1alpha1.ItemRestored, o["services vshop/web"].Result)
		for key, reason := range map[string]string{
			"replicasets.apps vshop/web-5d4": "Deployment web", "pods vshop/web-5d4-x7k": "ReplicaSet web-5d4", "endpoints vshop/web": "Service",
		} {
			assert.Equal(t, v1alpha1.ItemSkipped, o[key].Result, key)
			assert.Contains(t, o[key].Reason, reason, key)
		}
		kc := fastClient(t, s.cluster.Config())
		svc, err := kc.CoreV1().Services("vshop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, "10.96.7.7", svc.Spec.ClusterIP, "the target cluster assigns the cluster IP")

		dyn, err := dynamic.NewForConfig(s.cluster.Config())
		require.NoError(t, err)
		hpa, err := dyn.Resource(schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}).
			Namespace("vshop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		metrics, _, _ := unstructured.NestedSlice(hpa.Object, "spec", "metrics")
		require.Len(t, metrics, 1, "restored from the v2 copy, which holds the metric")
	})

	t.Run("velero backup with the CLI", func(t *testing.T) {
		_, stderr, code := s.cli("restore", "create", "velero-cli", "--from-backup", "velero-shop",
			"--namespace-mappings", "vshop:vshop-cli", "--wait")
		assert.Equal(t, starter.ExitPartiallyFailed, code, "restore create --wait exit code; stderr: %s", stderr)
		stdout, stderr, code := s.cli("restore", "results", "velero-cli", "--only", "failed", "-o", "json")
		require.Equal(t, 0, code, stderr)
		var res v1alpha1.RestoreResults
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		require.Len(t, res.Items, 1, "only the failed item: %s", stdout)
		assert.Equal(t, "vshop-cli", res.Items[0].Namespace)
		assert.Equal(t, "bad", res.Items[0].Name)
		stdout, _, code = s.cli("restore", "describe", "velero-cli")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "PartiallyFailed")
		assert.Contains(t, stdout, "horizontalpodautoscalers.autoscaling")
	})

	t.Run("unknown backup", func(t *testing.T) {
		_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "r-unknown", BackupName: "no-such-backup"}})
		require.Error(t, err)
		assert.True(t, errors.Is(err, starter.ErrNotFound), "%v", err)
		_, stderr, code := s.cli("restore", "create", "r-unknown", "--from-backup", "no-such-backup")
		assert.Equal(t, starter.ExitNotFound, code, stderr)
		assert.Contains(t, stderr, "no-such-backup")
		_, err = s.starter.GetRestore(ctx, "r-unknown")
		assert.True(t, errors.Is(err, starter.ErrNotFound), "nothing was started: %v", err)
	})

	t.Run("backup in progress", func(t *testing.T) {
		seedConfigMaps(t, s.cluster.Config(), "busy", 1, 200)
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{
			BackupSpec: v1alpha1.BackupSpec{Name: "busy-1", IncludedNamespaces: []string{"busy-*"}},
			Options:    v1alpha1.BackupOptions{PageSize: 10}})
		require.NoError(t, err)
		_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "r-busy", BackupName: "busy-1"}})
		var conflict *starter.ConflictError
		require.True(t, errors.As(err, &conflict), "%v", err)
		assert.Contains(t, err.Error(), "still in progress")
		_, err = s.starter.CancelBackup(ctx, "busy-1")
		require.NoError(t, err)
	})

	t.Run("corrupt tarball", func(t *testing.T) {
		b := veleroShop("velero-cut")
		tarball, err := velero.Tarball(b.Objects)
		require.NoError(t, err)
		b.TruncateAt = len(tarball) / 2
		require.NoError(t, velero.Write(ctx, s.location, b))
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "from-cut", BackupName: "velero-cut"}}, time.Minute)
		assert.Equal(t, v1alpha1.PhaseFailed, v.Phase)
		assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeCorruptBackup)
		assert.Contains(t, v.Status.FailureReason, "velero-cut.tar.gz")
	})

	t.Run("into another cluster", func(t *testing.T) {
		_, err := sample.Seed(ctx, s.cluster.Config(), "shop2")
		require.NoError(t, err)
		s.backup(v1alpha1.BackupSpec{Name: "shop2-1", IncludedNamespaces: []string{"shop2"}})
		want := liveObjects(t, s.cluster.Config(), "shop2")

		other := newStackAt(t, s.location)
		other.startWorker()
		list, err := other.starter.ListBackups(ctx)
		require.NoError(t, err)
		names := map[string]bool{}
		for _, v := range list.Items {
			names[v.Name] = true
		}
		assert.True(t, names["shop2-1"] && names["velero-shop"], "a fresh install lists the location's backups: %v", names)

		v := other.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "shop2-elsewhere", BackupName: "shop2-1"}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "failed: %v", failedOutcomes(other.outcomes("shop2-elsewhere")))
		assertSameObjects(t, want, liveObjects(t, other.cluster.Config(), "shop2"))
	})

	loc, err := location.OpenPlain(ctx, s.location)
	require.NoError(t, err)
	defer loc.Close()
	for _, r := range []string{"from-velero", "from-cut", "shop2-elsewhere"} {
		ok, err := loc.Exists(ctx, location.Restore(r).Results())
		require.NoError(t, err)
		assert.True(t, ok, "restore %s recorded its results", r)
		work, err := loc.Keys(ctx, location.Restore(r).Work())
		require.NoError(t, err)
		assert.Empty(t, work, "restore %s left intermediate state", r)
	}
}
