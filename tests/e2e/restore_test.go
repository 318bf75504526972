package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sample"
	"github.com/cairn-backup/cairn/starter"
)

// TestRestoreRoundTrip backs up a realistic application namespace, deletes
// it (and its CRD), restores it, and finds every object back as it was;
// then restores the same backup into a mapped namespace.
func TestRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	// Its own cluster: it deletes and restores the Widget CRD.
	s := newStack(t)
	s.startWorker()
	cfg := s.cluster.Config()
	ctx := context.Background()
	_, err := sample.Seed(ctx, cfg, "shop")
	require.NoError(t, err)
	before := liveObjects(t, cfg, "shop")
	require.Contains(t, before, "widgets.demo.cairn.io/blue-widget")
	require.Contains(t, before, "ingresses.networking.k8s.io/shop-web")

	s.backup(v1alpha1.BackupSpec{Name: "shop-1", IncludedNamespaces: []string{"shop"}})
	deleteNamespace(t, cfg, "shop")
	ext, err := apiext.NewForConfig(cfg)
	require.NoError(t, err)
	require.NoError(t, ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.demo.cairn.io", metav1.DeleteOptions{}))
	until(t, func() bool {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.demo.cairn.io", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 200*time.Millisecond, "CRD not deleted")

	t.Run("into the deleted namespace", func(t *testing.T) {
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "shop-r1", BackupName: "shop-1"}}, 2*time.Minute)
		outcomes := s.outcomes("shop-r1")
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "failed items: %v", failedOutcomes(outcomes))
		after := liveObjects(t, cfg, "shop")
		assertSameObjects(t, before, after)

		assert.Equal(t, v1alpha1.ItemRestored, outcomes["customresourcedefinitions.apiextensions.k8s.io /widgets.demo.cairn.io"].Result)
		for key, o := range outcomes {
			assert.NotEqual(t, v1alpha1.ItemFailed, o.Result, "%s: %s", key, o.Reason)
		}
		assertRestoredDetails(t, s, "shop", "shop-r1")
		assert.Nil(t, widgetStatus(t, s, "shop"), "status is left to controllers unless asked for")
		recordHistory(t, s, v1alpha1.RestoreWorkflowID("shop-r1"), "restore_completed.json")
	})

	t.Run("into a mapped namespace", func(t *testing.T) {
		spec := v1alpha1.RestoreSpec{Name: "shop-r2", BackupName: "shop-1", NamespaceMapping: map[string]string{"shop": "shop-copy"},
			RestoreStatus: &v1alpha1.ResourceSelector{IncludedResources: []string{"widgets.demo.cairn.io"}}}
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: spec}, 2*time.Minute)
		outcomes := s.outcomes("shop-r2")
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "failed items: %v", failedOutcomes(outcomes))
		copied := liveObjects(t, cfg, "shop-copy")
		assertSameObjects(t, before, copied)
		assert.Equal(t, "shop", outcomes["configmaps shop-copy/shop-settings"].SourceNamespace)
		assertRestoredDetails(t, s, "shop-copy", "shop-r2")
		assert.Equal(t, map[string]any{"state": "ready"}, widgetStatus(t, s, "shop-copy"), "restoreStatus names widgets")
	})
}

// assertSameObjects compares two namespace snapshots object by object.
func assertSameObjects(t *testing.T, want, got map[string]map[string]any) {
	t.Helper()
	for key, obj := range want {
		if assert.Contains(t, got, key, "not restored") {
			assert.Equal(t, obj, got[key], "%s differs after restore", key)
		}
	}
	for key := range got {
		assert.Contains(t, want, key, "restore created %s, which was not backed up", key)
	}
}

// assertRestoredDetails checks what the comparison normalises away: the
// restore labels, a re-linked owner, a fresh service-account token.
func assertRestoredDetails(t *testing.T, s *stack, namespace, restore string) {
	t.Helper()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	cm, err := kc.CoreV1().ConfigMaps(namespace).Get(ctx, "shop-settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, restore, cm.Labels["cairn.io/restore-name"])
	assert.Equal(t, "shop-1", cm.Labels["cairn.io/backup-name"])

	dyn, err := dynamic.NewForConfig(s.cluster.Config())
	require.NoError(t, err)
	widget, err := dyn.Resource(sample.WidgetResource).Namespace(namespace).Get(ctx, "blue-widget", metav1.GetOptions{})
	require.NoError(t, err)
	owned, err := kc.CoreV1().ConfigMaps(namespace).Get(ctx, "blue-widget-config", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, owned.OwnerReferences, 1, "owner reference of the widget's ConfigMap")
	assert.Equal(t, widget.GetUID(), owned.OwnerReferences[0].UID, "owner reference points at the restored widget")

	svc, err := kc.CoreV1().Services(namespace).Get(ctx, "shop-web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, svc.Spec.ClusterIP, "the cluster assigned a cluster IP")

	assert.Eventually(t, func() bool {
		sec, err := kc.CoreV1().Secrets(namespace).Get(ctx, "shop-token", metav1.GetOptions{})
		return err == nil && len(sec.Data["token"]) > 0
	}, time.Minute, 200*time.Millisecond, "the cluster issued a new token into the restored token secret")
}

func widgetStatus(t *testing.T, s *stack, namespace string) any {
	t.Helper()
	dyn, err := dynamic.NewForConfig(s.cluster.Config())
	require.NoError(t, err)
	w, err := dyn.Resource(sample.WidgetResource).Namespace(namespace).Get(context.Background(), "blue-widget", metav1.GetOptions{})
	require.NoError(t, err)
	return w.Object["status"]
}

// TestRestoreExistingResourcePolicy restores over a half-changed namespace
// with each policy and checks the documented outcome of every object.
func TestRestoreExistingResourcePolicy(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	seedConfigMaps(t, s.cluster.Config(), "half", 1, 3) // half-00: cm-00000, cm-00001, cm-00002
	const ns = "half-00"
	s.backup(v1alpha1.BackupSpec{Name: "half-1", IncludedNamespaces: []string{ns}})

	changed, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "cm-00000", metav1.GetOptions{})
	require.NoError(t, err)
	changed.Data["payload"] = "changed"
	_, err = kc.CoreV1().ConfigMaps(ns).Update(ctx, changed, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, kc.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-00001", metav1.DeleteOptions{}))

	payload := func(name string) string {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return cm.Data["payload"]
	}
	key := func(name string) string { return "configmaps " + ns + "/" + name }

	t.Run("none", func(t *testing.T) {
		spec := v1alpha1.RestoreSpec{Name: "half-none", BackupName: "half-1", ExistingResourcePolicy: v1alpha1.ExistingResourceNone}
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: spec}, time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
		o := s.outcomes("half-none")
		assert.Equal(t, v1alpha1.ItemSkipped, o[key("cm-00000")].Result, "changed object is kept")
		assert.Contains(t, o[key("cm-00000")].Reason, "differs")
		assert.Equal(t, "changed", payload("cm-00000"))
		assert.Equal(t, v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: ns, Name: "cm-00001", Result: v1alpha1.ItemRestored,
			Action: v1alpha1.ActionCreated}, o[key("cm-00001")], "deleted object is recreated")
		assert.Equal(t, v1alpha1.ActionUnchanged, o[key("cm-00002")].Action, "identical object counts as restored")
		assert.Equal(t, v1alpha1.ItemRestored, o[key("cm-00002")].Result)
		assert.Equal(t, 1, v.Status.ItemsSkipped-skippedByRule(o), "skipped items")
		assert.GreaterOrEqual(t, v.Status.Warnings, 1, "the skipped object is a warning")
	})

	t.Run("update", func(t *testing.T) {
		spec := v1alpha1.RestoreSpec{Name: "half-update", BackupName: "half-1", ExistingResourcePolicy: v1alpha1.ExistingResourceUpdate}
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: spec}, time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
		o := s.outcomes("half-update")
		assert.Equal(t, v1alpha1.ActionUpdated, o[key("cm-00000")].Action, "changed object is patched back")
		assert.Equal(t, v1alpha1.ItemRestored, o[key("cm-00000")].Result)
		assert.NotEqual(t, "changed", payload("cm-00000"))
		assert.Equal(t, payload("cm-00002"), payload("cm-00000"), "patched to the backed-up payload")
		assert.Equal(t, v1alpha1.ActionUnchanged, o[key("cm-00001")].Action, "the object restored by the first run is identical")
		assert.Equal(t, v1alpha1.ActionUnchanged, o[key("cm-00002")].Action)
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "cm-00000", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "half-update", cm.Labels["cairn.io/restore-name"], "an updated object carries the restore's label")
	})
}

func skippedByRule(o map[string]v1alpha1.ItemOutcome) int {
	n := 0
	for _, x := range o {
		if x.Result == v1alpha1.ItemSkipped && x.Action == "" && x.Reason != "" && !strings.Contains(x.Reason, "differs") {
			n++
		}
	}
	return n
}
