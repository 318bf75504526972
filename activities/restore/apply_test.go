package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func configMap(name, value, restore string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{v1alpha1.LabelRestore: restore}},
		"data":     map[string]any{"k": value}}
}

// applyFixture writes batches of ConfigMaps for restore r1 into a file
// location and returns the activity environment with a fake cluster.
func applyFixture(t *testing.T, batches [][]map[string]any, existing ...runtime.Object) (*testsuite.TestActivityEnvironment, *dynamicfake.FakeDynamicClient, string) {
	t.Helper()
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	for b, objs := range batches {
		var lines []Item
		for _, o := range objs {
			lines = append(lines, Item{Object: o})
		}
		require.NoError(t, loc.WriteAll(ctx, location.Restore("r1").Batch("configmaps", b), jsonLines(lines)))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", widgetsGVR: "WidgetList"}, existing...)
	clients := &kube.Clients{Dynamic: dyn, Discovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&Activities{Clients: clients, Log: zap.NewNop()})
	return env, dyn, locURL
}

var configMapType = v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}

func applyInput(locURL string, batches int) v1alpha1.ApplyInput {
	return v1alpha1.ApplyInput{Restore: "r1", Backup: "b1", Location: locURL,
		Types:  []v1alpha1.RestoreType{{ResourceType: configMapType, Batches: batches}},
		Policy: v1alpha1.ExistingResourceNone, Options: v1alpha1.RestoreOptions{Concurrency: 3}.WithDefaults()}
}

func created(dyn *dynamicfake.FakeDynamicClient) []string {
	var names []string
	for _, a := range dyn.Actions() {
		if c, ok := a.(kubetesting.CreateAction); ok {
			names = append(names, c.GetObject().(*unstructured.Unstructured).GetName())
		}
	}
	return names
}

// TestApplyStoresEveryBatchAndJudgesExistingObjects: every item gets one
// outcome, in batch order; an identical existing object is restored
// unchanged, a different one skipped under policy none.
func TestApplyStoresEveryBatchAndJudgesExistingObjects(t *testing.T) {
	var batches [][]map[string]any
	for b := range 4 {
		var objs []map[string]any
		for i := range 5 {
			objs = append(objs, configMap(fmt.Sprintf("cm-%d-%d", b, i), "v", "r1"))
		}
		batches = append(batches, objs)
	}
	same := &unstructured.Unstructured{Object: configMap("cm-1-1", "v", "other")}
	differs := &unstructured.Unstructured{Object: configMap("cm-2-2", "changed", "other")}
	env, dyn, locURL := applyFixture(t, batches, same, differs)

	val, err := env.ExecuteActivity((&Activities{}).ApplyResources, applyInput(locURL, 4))
	require.NoError(t, err)
	var res v1alpha1.ApplyResult
	require.NoError(t, val.Get(&res))
	assert.Equal(t, []v1alpha1.TypeApplied{{Resource: "configmaps", Outcome: v1alpha1.TypeOutcome{Restored: 19, Skipped: 1}}}, res.Types)

	loc, err := location.OpenPlain(context.Background(), locURL)
	require.NoError(t, err)
	defer loc.Close()
	seen := map[string]v1alpha1.ItemOutcome{}
	for b := range 4 {
		require.NoError(t, loc.ReadLines(context.Background(), location.Restore("r1").BatchResult("configmaps", b), func(line []byte) error {
			var o v1alpha1.ItemOutcome
			require.NoError(t, json.Unmarshal(line, &o))
			assert.NotContains(t, seen, o.Name)
			seen[o.Name] = o
			return nil
		}))
	}
	assert.Len(t, seen, 20)
	assert.Equal(t, v1alpha1.ActionUnchanged, seen["cm-1-1"].Action)
	assert.Equal(t, v1alpha1.ItemSkipped, seen["cm-2-2"].Result)
	assert.Equal(t, ReasonExistsDiffers, seen["cm-2-2"].Reason)
	assert.Equal(t, v1alpha1.ActionCreated, seen["cm-3-4"].Action)
	assert.Len(t, created(dyn), 20, "one create per item, none repeated")
}

// TestApplyResumesAfterStoredBatches: a retried attempt applies neither
// the types its heartbeat counts done, nor the batches it reports, nor
// one an earlier attempt stored without reporting it, and still counts
// their outcomes.
func TestApplyResumesAfterStoredBatches(t *testing.T) {
	batches := [][]map[string]any{
		{configMap("a", "v", "r1")}, {configMap("b", "v", "r1")}, {configMap("c", "v", "r1")},
	}
	env, dyn, locURL := applyFixture(t, batches)
	loc, err := location.OpenPlain(context.Background(), locURL)
	require.NoError(t, err)
	defer loc.Close()
	stored := []v1alpha1.ItemOutcome{{Resource: "configmaps", Namespace: "shop", Name: "b", Result: v1alpha1.ItemRestored, Action: v1alpha1.ActionCreated}}
	require.NoError(t, loc.WriteAll(context.Background(), location.Restore("r1").BatchResult("configmaps", 1), jsonLines(stored)))

	// The batch's first type, secrets, is done: its batches are not even
	// in the location, so applying it again would fail.
	in := applyInput(locURL, 3)
	secrets := v1alpha1.RestoreType{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}, Batches: 1}
	in.Types = append([]v1alpha1.RestoreType{secrets}, in.Types...)
	secretsDone := v1alpha1.TypeApplied{Resource: "secrets", Outcome: v1alpha1.TypeOutcome{Restored: 7}}
	env.SetHeartbeatDetails(ApplyProgress{Done: []v1alpha1.TypeApplied{secretsDone}, NextBatch: 1, Outcome: v1alpha1.TypeOutcome{Restored: 1}})
	val, err := env.ExecuteActivity((&Activities{}).ApplyResources, in)
	require.NoError(t, err)
	var res v1alpha1.ApplyResult
	require.NoError(t, val.Get(&res))
	assert.Equal(t, []v1alpha1.TypeApplied{secretsDone, {Resource: "configmaps", Outcome: v1alpha1.TypeOutcome{Restored: 3}}}, res.Types)
	assert.Equal(t, []string{"c"}, created(dyn), "only the batch nobody stored is applied")
	_, err = dyn.Resource(configMaps).Namespace("shop").Get(context.Background(), "c", metav1.GetOptions{})
	assert.NoError(t, err)
}

// TestApplyTakesItsTypesInOrder: one activity applies the types of its
// input one after another, each counted on its own.
func TestApplyTakesItsTypesInOrder(t *testing.T) {
	env, dyn, locURL := applyFixture(t, [][]map[string]any{{configMap("a", "v", "r1"), configMap("b", "v", "r1")}})
	loc, err := location.OpenPlain(context.Background(), locURL)
	require.NoError(t, err)
	defer loc.Close()
	widgets := v1alpha1.ResourceType{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	widget := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "shop"}}
	require.NoError(t, loc.WriteAll(context.Background(), location.Restore("r1").Batch("widgets.example.com", 0), jsonLines([]Item{{Object: widget}})))

	in := applyInput(locURL, 1)
	in.Types = append([]v1alpha1.RestoreType{{ResourceType: widgets, Batches: 1}}, in.Types...)
	val, err := env.ExecuteActivity((&Activities{}).ApplyResources, in)
	require.NoError(t, err)
	var res v1alpha1.ApplyResult
	require.NoError(t, val.Get(&res))
	assert.Equal(t, []v1alpha1.TypeApplied{
		{Resource: "widgets.example.com", Outcome: v1alpha1.TypeOutcome{Restored: 1}},
		{Resource: "configmaps", Outcome: v1alpha1.TypeOutcome{Restored: 2}},
	}, res.Types)
	names := created(dyn)
	require.Len(t, names, 3)
	assert.Equal(t, "w", names[0], "the first type's items are created first")
	assert.ElementsMatch(t, []string{"a", "b"}, names[1:])
}

// TestApplyLogsTheFirstFailuresOnly: a type whose every item fails logs
// the first maxLoggedFailures of them and one line for the rest, while
// each failure still has its outcome.
func TestApplyLogsTheFirstFailuresOnly(t *testing.T) {
	var batch []map[string]any
	for i := range maxLoggedFailures + 20 {
		batch = append(batch, configMap(fmt.Sprint("cm-", i), "v", "r1"))
	}
	env, dyn, locURL := applyFixture(t, [][]map[string]any{batch})
	dyn.PrependReactor("create", "configmaps", func(kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(configMaps.GroupResource(), "", errors.New("not allowed"))
	})
	val, err := env.ExecuteActivity((&Activities{}).ApplyResources, applyInput(locURL, 1))
	require.NoError(t, err)
	var res v1alpha1.ApplyResult
	require.NoError(t, val.Get(&res))
	assert.Equal(t, maxLoggedFailures+20, res.Types[0].Outcome.Failed)

	loc, err := location.OpenPlain(context.Background(), locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Restore("r1").LogsPrefix())
	require.NoError(t, err)
	lines := map[string]int{}
	for _, k := range keys {
		require.NoError(t, loc.ReadLines(context.Background(), k, func(line []byte) error {
			var l struct{ Msg string }
			require.NoError(t, json.Unmarshal(line, &l))
			lines[l.Msg]++
			return nil
		}))
	}
	assert.Equal(t, maxLoggedFailures, lines["Item not restored"])
	assert.Equal(t, 1, lines["More items of this type not restored; results.json lists each"])
}
