package restore

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubetesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// TestItemsWaitForWhatTheirExtensionNames: an item whose answer waits for
// objects is created once they are ready (a ConfigMap that appears while
// it waits); it fails, and is not created, when one does not become ready
// in time, when one's status says it failed, or when the restore's
// identity may not read it. The others are created at once.
func TestItemsWaitForWhatTheirExtensionNames(t *testing.T) {
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Restore("r1")
	var batch []Item
	for _, name := range []string{"appears", "never", "stalled", "secret", "free"} {
		batch = append(batch, Item{Object: configMap(name, "v", "r1")})
	}
	require.NoError(t, loc.WriteAll(ctx, keys.Batch("configmaps", 0), jsonLines(batch)))
	exts := []v1alpha1.Extension{{Name: "gate", TaskQueue: "gate-q", Restore: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}}}
	require.NoError(t, loc.WriteJSON(ctx, keys.Extensions(), exts))

	stalled := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop", "generation": int64(1)},
		"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
			map[string]any{"type": "Stalled", "status": "True", "message": "no quota"}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", widgetsGVR: "WidgetList"}, stalled)
	var gets atomic.Int32
	dyn.PrependReactor("get", "configmaps", func(a kubetesting.Action) (bool, runtime.Object, error) {
		switch a.(kubetesting.GetAction).GetName() {
		case "needed":
			if gets.Add(1) == 1 {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "needed")
			}
			return true, &unstructured.Unstructured{Object: configMap("needed", "v", "someone")}, nil
		case "private":
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "private", nil)
		}
		return false, nil, nil
	})
	disco := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list", "create"}}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "list"}}}},
	}}}
	ref := func(resource, group, name string) extension.ObjectRef {
		return extension.ObjectRef{Group: group, Resource: resource, Namespace: "shop", Name: name}
	}
	caller := &answerer{answer: func(obj map[string]any) extension.RestoreItemAnswer {
		switch obj["metadata"].(map[string]any)["name"] {
		case "appears":
			return extension.RestoreItemAnswer{WaitFor: &extension.WaitFor{Items: []extension.ObjectRef{ref("configmaps", "", "needed")}, Timeout: "1m"}}
		case "never":
			return extension.RestoreItemAnswer{WaitFor: &extension.WaitFor{Items: []extension.ObjectRef{ref("configmaps", "", "absent")}, Timeout: "1s"}}
		case "stalled":
			return extension.RestoreItemAnswer{WaitFor: &extension.WaitFor{Items: []extension.ObjectRef{ref("widgets", "example.com", "w")}}}
		case "secret":
			return extension.RestoreItemAnswer{WaitFor: &extension.WaitFor{Items: []extension.ObjectRef{ref("configmaps", "", "private")}}}
		}
		return extension.RestoreItemAnswer{}
	}}
	a := &Activities{Clients: &kube.Clients{Dynamic: dyn, Discovery: disco}, Log: zap.NewNop(), Extensions: caller}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)

	res, err := activitytest.Run[v1alpha1.ApplyResult](t, env, a.ApplyResources, applyInput(locURL, 1))
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.TypeOutcome{Restored: 2, Failed: 3}, res.Types[0].Outcome)
	assert.ElementsMatch(t, []string{"appears", "free"}, created(dyn))
	reasons := map[string]string{}
	require.NoError(t, loc.ReadLines(ctx, keys.BatchResult("configmaps", 0), func(line []byte) error {
		var o v1alpha1.ItemOutcome
		require.NoError(t, json.Unmarshal(line, &o))
		reasons[o.Name] = o.Reason
		return nil
	}))
	assert.Equal(t, "extension gate: waited 1s for configmaps shop/absent to be ready; it does not exist", reasons["never"])
	assert.Equal(t, "extension gate: widgets.example.com shop/w failed: no quota", reasons["stalled"])
	assert.Equal(t, "extension gate: configmaps shop/private: the restore's identity may not read it", reasons["secret"])
	assert.Equal(t, int32(2), gets.Load(), "the ConfigMap waited for was read until it appeared")
}
