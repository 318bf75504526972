package restore

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
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

// fakeOperator ends each operation as end says, by its operation ID, and
// keeps what it was asked.
type fakeOperator struct {
	mu     sync.Mutex
	inputs map[string]v1alpha1.ExtensionOperationInput // by workflow ID
	reqs   map[string]extension.RestoreOperationRequest
	end    func(opID string) (json.RawMessage, error)
}

func (f *fakeOperator) Run(_ context.Context, id string, in v1alpha1.ExtensionOperationInput) (json.RawMessage, error) {
	var req extension.RestoreOperationRequest
	if err := json.Unmarshal(in.Request, &req); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.inputs[id], f.reqs[req.OperationID] = in, req
	f.mu.Unlock()
	return f.end(req.OperationID)
}

func (f *fakeOperator) Cancel(context.Context, string) error { return nil }

// operationsFixture is a restore r1 of three ConfigMaps, one of which
// exists and differs, whose extension answers each with an import
// operation; the operator fails import/b.
func operationsFixture(t *testing.T) (*testsuite.TestActivityEnvironment, *Activities, *location.Location, string, *fakeOperator, *answerer) {
	t.Helper()
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	keys := location.Restore("r1")
	batch := []Item{{Object: configMap("a", "v", "r1")}, {Object: configMap("b", "v", "r1")}, {Object: configMap("differs", "v", "r1")}}
	require.NoError(t, loc.WriteAll(ctx, keys.Batch("configmaps", 0), jsonLines(batch)))
	exts := []v1alpha1.Extension{{Name: "importer", TaskQueue: "importer-q", Restore: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}}}
	require.NoError(t, loc.WriteJSON(ctx, keys.Extensions(), exts))

	existing := &unstructured.Unstructured{Object: configMap("differs", "other", "someone")}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"}, existing)
	caller := &answerer{answer: func(obj map[string]any) extension.RestoreItemAnswer {
		name := obj["metadata"].(map[string]any)["name"].(string)
		return extension.RestoreItemAnswer{Operation: &extension.OperationStart{ID: "import/" + name, Data: json.RawMessage(`{"from":"` + name + `"}`)}}
	}}
	operator := &fakeOperator{inputs: map[string]v1alpha1.ExtensionOperationInput{}, reqs: map[string]extension.RestoreOperationRequest{},
		end: func(id string) (json.RawMessage, error) {
			if id == "import/b" {
				return nil, temporal.NewApplicationError("operation failed: no disk", v1alpha1.ErrTypeExtension)
			}
			return json.RawMessage(`{"description":"imported"}`), nil
		}}
	a := &Activities{Clients: &kube.Clients{Dynamic: dyn, Discovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}},
		Log: zap.NewNop(), Extensions: caller, Operations: operator}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a)
	return env, a, loc, locURL, operator, caller
}

// TestRestoreOperationsRunForRestoredItems: an answer's operation is
// recorded with its batch only when its item was restored (not for one
// left as it existed); the operations step runs each under the restore's
// workflow ID with the item as restored, the namespace mapping and the
// answer's data; finalize lists them in operations.json and warns of the
// one that failed.
func TestRestoreOperationsRunForRestoredItems(t *testing.T) {
	ctx := context.Background()
	env, a, loc, locURL, operator, caller := operationsFixture(t)
	keys := location.Restore("r1")
	in := applyInput(locURL, 1)
	in.NamespaceMapping = map[string]string{"src": "shop"}
	_, err := activitytest.Run[v1alpha1.ApplyResult](t, env, a.ApplyResources, in)
	require.NoError(t, err)
	var recorded []string
	require.NoError(t, loc.ReadLines(ctx, keys.ExtensionOperations("configmaps", 0), func(line []byte) error {
		var rec struct{ ID string }
		require.NoError(t, json.Unmarshal(line, &rec))
		recorded = append(recorded, rec.ID)
		return nil
	}))
	assert.Equal(t, []string{"import/a", "import/b"}, recorded, "the item left as it existed starts none")
	assert.Equal(t, in.NamespaceMapping, caller.mapping, "the extension is told the namespace mapping")

	res, err := activitytest.Run[v1alpha1.RunRestoreOperationsResult](t, env, a.RunRestoreOperations,
		v1alpha1.RunRestoreOperationsInput{Restore: "r1", Backup: "b1", Location: locURL, Timeout: 3600e9})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.OperationCounts{Total: 2, Completed: 1, Failed: 1}, res.Operations)
	assert.Equal(t, "extension importer: operation failed: no disk", res.FirstError)
	id := v1alpha1.RestoreOperationWorkflowID("r1", "importer", "import/a")
	require.Contains(t, operator.inputs, id)
	assert.Equal(t, "r1", operator.inputs[id].Restore)
	assert.Equal(t, "importer-q", operator.inputs[id].TaskQueue)
	assert.Equal(t, extension.RestoreOperationRequest{Restore: "r1", Backup: "b1", Extension: "importer", OperationID: "import/a",
		Resource: extension.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"},
		Item:     extension.ObjectRef{Resource: "configmaps", Namespace: "shop", Name: "a"}, Data: json.RawMessage(`{"from":"a"}`)},
		operator.reqs["import/a"])

	fin, err := activitytest.Run[v1alpha1.FinalizeRestoreResult](t, env, a.FinalizeRestore, v1alpha1.FinalizeRestoreInput{
		Spec:   v1alpha1.RestoreSpec{Name: "r1", BackupName: "b1", StorageLocation: locURL},
		Status: v1alpha1.RestoreStatus{Phase: v1alpha1.PhasePartiallyFailed, Order: []string{"configmaps"}}})
	require.NoError(t, err)
	var file v1alpha1.OperationsFile
	require.NoError(t, loc.ReadJSON(ctx, keys.Operations(), &file))
	require.Len(t, file.Operations, 2)
	assert.Equal(t, v1alpha1.OperationCompleted, file.Operations[0].Phase)
	assert.Equal(t, "imported", file.Operations[0].Progress)
	assert.Equal(t, v1alpha1.OperationFailed, file.Operations[1].Phase)
	var results struct{ Warnings []string }
	require.NoError(t, loc.ReadJSON(ctx, keys.Results(), &results))
	assert.Contains(t, results.Warnings, "configmaps shop/b: operation import/b: extension importer: operation failed: no disk")
	assert.Positive(t, fin.Warnings)
}

// TestRestoreDryRunCountsOperationsItWouldStart: a dry run tells the
// extension it is one, and its summary counts the operations the items
// it would restore would start.
func TestRestoreDryRunCountsOperationsItWouldStart(t *testing.T) {
	env, a, _, locURL, _, caller := operationsFixture(t)
	in := applyInput(locURL, 1)
	in.DryRun = true
	_, err := activitytest.Run[v1alpha1.ApplyResult](t, env, a.ApplyResources, in)
	require.NoError(t, err)
	assert.True(t, caller.dryRun, "the extension is told the restore is a dry run")
	sum, err := activitytest.Run[v1alpha1.RestoreDryRun](t, env, a.SummarizeRestoreDryRun,
		v1alpha1.SummarizeRestoreDryRunInput{Scratch: "r1", Location: locURL, Order: []string{"configmaps"}})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.ExtensionOperations, "the ConfigMap left as it exists would start none")
}
