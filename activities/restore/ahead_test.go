package restore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
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

var secretType = v1alpha1.ResourceType{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}

func secret(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{v1alpha1.LabelRestore: "r1"}}}
}

// TestAdditionalItemsAreRestoredFirstAndCountedOnce: an answer's
// additional items are created before its item: one of a later type with
// that type's extension's answer, one of a later batch, one of the same
// batch; an additional item's own additional item. Its type's step takes the outcome recorded then instead of
// applying it again, and its extension sees it once. An item whose
// additional item is neither in the restore nor in the cluster, or that
// names itself, fails and is not created.
func TestAdditionalItemsAreRestoredFirstAndCountedOnce(t *testing.T) {
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Restore("r1")
	batch := func(objs ...map[string]any) []byte {
		var items []Item
		for _, o := range objs {
			items = append(items, Item{Object: o})
		}
		return jsonLines(items)
	}
	require.NoError(t, loc.WriteAll(ctx, keys.Batch("configmaps", 0), batch(configMap("a", "v", "r1"), configMap("b", "v", "r1"),
		configMap("d", "v", "r1"), configMap("e", "v", "r1"), configMap("loop", "v", "r1"))))
	require.NoError(t, loc.WriteAll(ctx, keys.Batch("configmaps", 1), batch(configMap("c", "v", "r1"), configMap("c2", "v", "r1"))))
	require.NoError(t, loc.WriteAll(ctx, keys.Batch("secrets", 0), batch(secret("s1"), secret("s2"))))
	types := []v1alpha1.RestoreType{{ResourceType: configMapType, Items: 7, Batches: 2}, {ResourceType: secretType, Items: 2, Batches: 1}}
	require.NoError(t, loc.WriteJSON(ctx, keys.PlannedTypes(), types))
	exts := []v1alpha1.Extension{{Name: "deps", TaskQueue: "deps-q", Restore: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps", "secrets"}, AllowSecrets: true}}}
	require.NoError(t, loc.WriteJSON(ctx, keys.Extensions(), exts))

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", {Version: "v1", Resource: "secrets"}: "SecretList"})
	disco := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{Resources: []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "create"}},
		{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: []string{"get", "create"}}}}}}}
	ref := func(resource, name string) []extension.ObjectRef {
		return []extension.ObjectRef{{Resource: resource, Namespace: "shop", Name: name}}
	}
	seen := map[string]int{}
	caller := &answerer{answer: func(obj map[string]any) extension.RestoreItemAnswer {
		meta := obj["metadata"].(map[string]any)
		name := meta["name"].(string)
		seen[name]++
		switch name {
		case "a":
			return extension.RestoreItemAnswer{AdditionalItems: ref("secrets", "s1")}
		case "b":
			return extension.RestoreItemAnswer{AdditionalItems: ref("configmaps", "c")}
		case "d":
			return extension.RestoreItemAnswer{AdditionalItems: ref("secrets", "missing")}
		case "e":
			return extension.RestoreItemAnswer{AdditionalItems: ref("configmaps", "a")}
		case "loop":
			return extension.RestoreItemAnswer{AdditionalItems: ref("configmaps", "loop")}
		case "s1":
			meta["annotations"] = map[string]any{"changed-by": "deps"}
			out, _ := json.Marshal(obj)
			return extension.RestoreItemAnswer{Item: out, AdditionalItems: ref("configmaps", "c2")}
		}
		return extension.RestoreItemAnswer{}
	}}
	a := &Activities{Clients: &kube.Clients{Dynamic: dyn, Discovery: disco}, Log: zap.NewNop(), Extensions: caller}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)

	in := applyInput(locURL, 2)
	res, err := activitytest.Run[v1alpha1.ApplyResult](t, env, a.ApplyResources, in)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.TypeOutcome{Restored: 5, Failed: 2}, res.Types[0].Outcome, "a, b, c, c2 and e restored; d and loop failed")
	order := map[string]int{}
	for i, name := range created(dyn) {
		if _, ok := order[name]; !ok {
			order[name] = i
		}
	}
	assert.Less(t, order["s1"], order["a"], "the Secret of a later type is created before the item that asked")
	assert.Less(t, order["c"], order["b"], "the ConfigMap of a later batch is created before the item that asked")
	assert.Less(t, order["c2"], order["s1"], "an additional item's own additional item, of the asker's type, is created before it")
	assert.Less(t, order["a"], order["e"], "the ConfigMap of the same batch is created before the item that asked")
	assert.NotContains(t, order, "d")
	assert.NotContains(t, order, "loop")
	reasons := map[string]string{}
	for b := range 2 {
		require.NoError(t, loc.ReadLines(ctx, keys.BatchResult("configmaps", b), func(line []byte) error {
			var o v1alpha1.ItemOutcome
			require.NoError(t, json.Unmarshal(line, &o))
			reasons[o.Name] = string(o.Result) + ": " + o.Reason
			return nil
		}))
	}
	assert.Len(t, reasons, 7, "each ConfigMap has one outcome")
	assert.Equal(t, "failed: additional item secrets shop/missing is not in this restore (not in the backup, or left out by its filters) and does not exist", reasons["d"])
	assert.Equal(t, "failed: additional item configmaps shop/loop is among the items that asked for it: configmaps shop/loop → configmaps shop/loop", reasons["loop"])
	assert.Equal(t, "restored: ", reasons["c"], "the ConfigMap restored ahead counts with its own batch")

	in.Types = types[1:]
	res, err = activitytest.Run[v1alpha1.ApplyResult](t, env, a.ApplyResources, in)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.TypeOutcome{Restored: 2}, res.Types[0].Outcome, "s1 counts once, with its own type")
	s1, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("shop").Get(ctx, "s1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "deps", s1.GetAnnotations()["changed-by"], "restored ahead with its type's extension's answer")
	assert.Equal(t, 1, seen["s1"], "its extension sees it once")
	assert.Equal(t, 1, seen["c"])
	assert.Equal(t, 1, seen["c2"])
	assert.Equal(t, 1, seen["s2"])
	var creates int
	for _, act := range dyn.Actions() {
		if c, ok := act.(kubetesting.CreateAction); ok && c.GetObject().(*unstructured.Unstructured).GetName() == "s1" {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "its type's step does not apply it again")
}
