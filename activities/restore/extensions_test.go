package restore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// answerer answers every RestoreItems call with answer(i) for item i.
type answerer struct {
	calls  int
	answer func(obj map[string]any) extension.RestoreItemAnswer
	// mapping is the namespace mapping of the last request.
	mapping map[string]string
	// during, when set, runs inside each call.
	during func()
	// dryRun is the last request's.
	dryRun bool
}

func (a *answerer) Call(_ context.Context, _ string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	a.calls++
	var req extension.RestoreItemsRequest
	if err := json.Unmarshal(in.Request, &req); err != nil {
		return nil, err
	}
	a.mapping, a.dryRun = req.NamespaceMapping, req.DryRun
	if a.during != nil {
		a.during()
	}
	var resp extension.RestoreItemsResponse
	for _, raw := range req.Items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, a.answer(obj))
	}
	return json.Marshal(resp)
}

func cm(ns, name string) Item {
	return Item{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}}}
}

// TestRestoreActionsDecideOrChangeItems: an answer changes its item, skips
// it or fails it; one that names another object fails it; items the
// selector leaves out are neither sent nor decided. While the extension
// answers, the step's heartbeat names it.
func TestRestoreActionsDecideOrChangeItems(t *testing.T) {
	actions, err := extcall.Actions([]v1alpha1.Extension{{Name: "x", TaskQueue: "q",
		Restore: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}, IncludedNamespaces: []string{"target"}}}},
		"configmaps", extcall.RestoreSelector)
	require.NoError(t, err)
	caller := &answerer{answer: func(obj map[string]any) extension.RestoreItemAnswer {
		meta := obj["metadata"].(map[string]any)
		switch meta["name"] {
		case "skip":
			return extension.RestoreItemAnswer{Skip: "no"}
		case "fail":
			return extension.RestoreItemAnswer{Error: "broken"}
		case "other":
			meta["namespace"] = "kube-system"
		default:
			meta["labels"] = map[string]any{"changed": "yes"}
		}
		out, _ := json.Marshal(obj)
		return extension.RestoreItemAnswer{Item: out}
	}}
	board := newWaitBoard()
	var waited []v1alpha1.ExtensionWait
	caller.during = func() { waited = board.shown() }
	p := &pipeline{gr: "configmaps", restore: "r", backup: "b", extensions: caller, beat: func() {},
		actions: actions, board: board}
	bw := &batchWork{items: []Item{cm("target", "change"), cm("target", "skip"), cm("target", "fail"), cm("target", "other"), cm("elsewhere", "left")}}
	bw.outcomes = make([]v1alpha1.ItemOutcome, len(bw.items))
	bw.left.Store(int32(len(bw.items)))

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	run := func(ctx context.Context) error { return p.extend(ctx, bw) }
	env.RegisterActivity(run)
	_, err = env.ExecuteActivity(run)
	require.NoError(t, err)

	assert.Equal(t, 1, caller.calls, "one batch")
	assert.Equal(t, []bool{false, true, true, true, false}, bw.decided)
	assert.Equal(t, int32(2), bw.left.Load(), "the changed and the unselected are left to apply")
	assert.Equal(t, map[string]any{"changed": "yes"}, bw.items[0].Object["metadata"].(map[string]any)["labels"])
	assert.Equal(t, v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "target", Name: "skip", Result: v1alpha1.ItemSkipped, Reason: "extension x: no"}, bw.outcomes[1])
	assert.Equal(t, v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "target", Name: "fail", Result: v1alpha1.ItemFailed, Reason: "extension x: broken"}, bw.outcomes[2])
	assert.Equal(t, v1alpha1.ItemFailed, bw.outcomes[3].Result)
	assert.Contains(t, bw.outcomes[3].Reason, "answered with ConfigMap kube-system/other, another object")
	assert.Nil(t, bw.items[4].Object["metadata"].(map[string]any)["labels"])
	require.Len(t, waited, 1, "the step's heartbeat names the extension while it answers")
	assert.Equal(t, "x", waited[0].Extension)
	assert.Equal(t, "q", waited[0].TaskQueue)
	assert.Empty(t, board.shown(), "and not once it answered")
}
