package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// fakeOperator ends each operation as end says, by its operation ID.
type fakeOperator struct {
	mu       sync.Mutex
	runs     map[string]int // workflow ID → runs
	reqs     map[string]extension.BackupOperationRequest
	canceled []string
	end      func(opID string) (json.RawMessage, error)
}

func (f *fakeOperator) Run(_ context.Context, id string, in v1alpha1.ExtensionOperationInput) (json.RawMessage, error) {
	var req extension.BackupOperationRequest
	if err := json.Unmarshal(in.Request, &req); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.runs[id]++
	f.reqs[req.OperationID] = req
	f.mu.Unlock()
	return f.end(req.OperationID)
}

func (f *fakeOperator) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.canceled = append(f.canceled, id)
	return nil
}

// TestRunOperationsRunsEachOnceAndReadsUpdatedItems: every recorded
// operation runs under its workflow ID, with the data its answer gave;
// an ID the extension gave twice fails the second without running; how
// each ended is recorded (completed, failed with the extension's message,
// canceled); the items the completed ones update are read again into
// updated parts, and those of the failed ones are not. A step retried
// after Temporal was out of reach asks for the same workflows.
func TestRunOperationsRunsEachOnceAndReadsUpdatedItems(t *testing.T) {
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Backup("b")
	cms := v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	exts := []v1alpha1.Extension{{Name: "x", TaskQueue: "x-queue", Backup: &v1alpha1.ExtensionSelector{Resources: []string{"*"}}}}
	require.NoError(t, loc.WriteJSON(ctx, keys.Plan(), StoredPlan{Types: []v1alpha1.ResourceType{cms}, Extensions: exts}))
	ref := func(name string) extension.ObjectRef {
		return extension.ObjectRef{Resource: "configmaps", Namespace: "shop", Name: name}
	}
	rec := func(id, item string, update ...extension.ObjectRef) []byte {
		line, _ := json.Marshal(extcall.OperationRecord{Extension: "x", ID: id, Item: ref(item), ItemsToUpdate: update,
			Data: json.RawMessage(`{"n":1}`)})
		return append(line, '\n')
	}
	var page []byte
	for _, line := range [][]byte{rec("ok", "a", ref("a")), rec("ok", "b", ref("b")), rec("broken", "c", ref("c")), rec("stopped", "d")} {
		page = append(page, line...)
	}
	require.NoError(t, loc.WriteAll(ctx, keys.ExtensionOperations(keys.Part("configmaps", 0, 0)), page))
	require.NoError(t, loc.WriteAll(ctx, keys.ExtensionOperations(keys.Part("configmaps", 0, 1)), rec("flaky", "e")))

	unreachable := true
	op := &fakeOperator{runs: map[string]int{}, reqs: map[string]extension.BackupOperationRequest{}, end: func(id string) (json.RawMessage, error) {
		switch id {
		case "broken":
			return nil, temporal.NewNonRetryableApplicationError("operation failed: no disk", v1alpha1.ErrTypeExtension, nil)
		case "stopped":
			return nil, temporal.NewCanceledError()
		case "flaky":
			if unreachable {
				return nil, errors.New("Temporal unreachable")
			}
		}
		return json.RawMessage(`{"description":"exported"}`), nil
	}}
	g := &getter{reads: map[string]int{}, objects: map[string]string{
		"configmaps shop/a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop","labels":{"v":"2"}}}`,
		"configmaps shop/c": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`,
	}}
	acts := &Activities{Lister: g, Log: zap.NewNop(), Clients: &kube.Clients{Discovery: &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}},
		Operations: op}
	in := v1alpha1.RunOperationsInput{Backup: "b", Location: locURL, Options: v1alpha1.BackupOptions{}.WithDefaults(), Timeout: 42}
	run := func() (*v1alpha1.RunOperationsResult, error) {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts.RunOperations)
		val, err := env.ExecuteActivity(acts.RunOperations, in)
		if err != nil {
			return nil, err
		}
		var res v1alpha1.RunOperationsResult
		return &res, val.Get(&res)
	}
	_, err = run()
	require.Error(t, err, "Temporal out of reach fails the attempt")
	unreachable = false
	res, err := run()
	require.NoError(t, err)

	assert.Equal(t, v1alpha1.OperationCounts{Total: 5, Completed: 2, Failed: 2, Canceled: 1}, res.Operations)
	assert.Equal(t, map[string]int{"configmaps": 1}, res.Updated, "only the completed operation's item is read again")
	assert.Equal(t, 1, g.reads["configmaps shop/a"], "read once, by the attempt that saw the operations end")
	assert.Zero(t, g.reads["configmaps shop/c"], "a failed operation's items are not read again")
	assert.Len(t, op.runs, 4, "the duplicate ID never runs")
	for id, n := range op.runs {
		assert.LessOrEqual(t, n, 2, "%s: at most once per attempt", id)
	}
	assert.Equal(t, op.runs[v1alpha1.ExtensionOperationWorkflowID("b", "x", "flaky")], 2, "the retried step asks for the same workflow")
	assert.JSONEq(t, `{"n":1}`, string(op.reqs["ok"].Data), "the operation gets its answer's data")
	assert.Equal(t, ref("a"), op.reqs["ok"].Item)

	var updated []string
	all, err := loc.Keys(ctx, keys.AllParts())
	require.NoError(t, err)
	for _, k := range all {
		if keys.IsUpdatedPart(k) {
			updated = append(updated, k)
		}
	}
	assert.Equal(t, []string{keys.UpdatedPart("configmaps", 0)}, updated)

	byItem := map[string]v1alpha1.Operation{}
	for _, o := range readJSONLines[v1alpha1.Operation](t, locURL, keys.OperationsRun()) {
		byItem[o.Item.Name] = o
	}
	require.Len(t, byItem, 5)
	assert.Equal(t, v1alpha1.OperationCompleted, byItem["a"].Phase)
	assert.Equal(t, "exported", byItem["a"].Progress)
	assert.Equal(t, v1alpha1.OperationFailed, byItem["b"].Phase)
	assert.Equal(t, `extension x: operation id "ok" was already started for configmaps shop/a`, byItem["b"].Error)
	assert.Equal(t, "extension x: operation failed: no disk", byItem["c"].Error)
	assert.Equal(t, v1alpha1.OperationCanceled, byItem["d"].Phase)
	assert.Equal(t, v1alpha1.OperationKindExtension, byItem["e"].Kind)
	assert.Equal(t, &v1alpha1.ItemRef{Resource: "configmaps", Namespace: "shop", Name: "e"}, byItem["e"].Item)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts.CancelOperations)
	_, err = env.ExecuteActivity(acts.CancelOperations, v1alpha1.CancelOperationsInput{Backup: "b", Location: locURL})
	require.NoError(t, err)
	assert.Len(t, op.canceled, 4, "cancel asks every operation that has a workflow")
}
