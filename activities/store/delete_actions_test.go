package store

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/tarball"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// deleteCaller answers delete calls, failing the items named "stuck".
type deleteCaller struct {
	mu   sync.Mutex
	ids  []string
	sent []string // "extension resource ns/name"
}

func (c *deleteCaller) Call(_ context.Context, id string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	var req extension.DeleteItemsRequest
	if err := json.Unmarshal(in.Request, &req); err != nil {
		return nil, err
	}
	resp := extension.DeleteItemsResponse{}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, id)
	for _, raw := range req.Items {
		var o struct {
			Metadata struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, err
		}
		c.sent = append(c.sent, req.Extension+" "+req.Resource.Resource+" "+o.Metadata.Namespace+"/"+o.Metadata.Name)
		ans := extension.DeleteItemAnswer{}
		if o.Metadata.Name == "stuck" {
			ans.Error = "export still locked"
		}
		resp.Items = append(resp.Items, ans)
	}
	return json.Marshal(resp)
}

// writeBackupTarball stores b1's tarball with the given items.
func writeBackupTarball(t *testing.T, f *fixture, items map[string][]string) {
	t.Helper()
	w, err := f.loc.NewWriter(context.Background(), b1.Resources())
	require.NoError(t, err)
	tw, err := tarball.NewWriter(w, time.Unix(0, 0))
	require.NoError(t, err)
	for _, gr := range []string{"configmaps", "secrets"} {
		for _, obj := range items[gr] {
			var o struct {
				Metadata struct{ Name, Namespace string }
			}
			require.NoError(t, json.Unmarshal([]byte(obj), &o))
			require.NoError(t, tw.Add(gr, "v1", o.Metadata.Namespace, o.Metadata.Name, []byte(obj)))
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, w.Close())
}

// TestDeleteActionsSendWhatTheSelectorPicks: each item a delete selector
// picks is sent once, as the backup holds it, with its type; Secrets only
// to an extension that allows them; an item the extension cannot delete
// for fails the step, non-retryable, naming it. Without an extension
// registered for deletes nothing is read.
func TestDeleteActionsSendWhatTheSelectorPicks(t *testing.T) {
	caller := &deleteCaller{}
	acts := &Activities{Log: zap.NewNop(), Extensions: caller, Registered: []v1alpha1.Extension{
		{Name: "exports", TaskQueue: "q", Delete: &v1alpha1.ExtensionSelector{Resources: []string{"*"}, LabelSelector: "export=yes"}},
		{Name: "other-ns", TaskQueue: "q", Delete: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}, IncludedNamespaces: []string{"other"}}},
	}}
	f := newFixture(t, acts)
	cm := func(name string, labels string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"shop"` + labels + `}}`
	}
	writeBackupTarball(t, f, map[string][]string{
		"configmaps": {cm("a", `,"labels":{"export":"yes"}`), cm("b", ""), cm("stuck", `,"labels":{"export":"yes"}`)},
		"secrets":    {`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"shop","labels":{"export":"yes"}}}`},
	})
	in := v1alpha1.DeleteActionsInput{Backup: "b1", Location: f.url, Deletion: "run-1"}
	_, err := f.env.ExecuteActivity(acts.RunDeleteActions, in)
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, v1alpha1.ErrTypeExtension, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "configmaps shop/stuck: extension exports: export still locked")
	assert.Contains(t, appErr.Message(), "which is kept")
	assert.ElementsMatch(t, []string{"exports configmaps shop/a", "exports configmaps shop/stuck"}, caller.sent)
	for _, id := range caller.ids {
		assert.True(t, strings.HasPrefix(id, "extension/b1/exports/delete/run-1/configmaps/"), id)
	}

	acts.Registered = nil
	caller.sent = nil
	val, err := f.env.ExecuteActivity(acts.RunDeleteActions, in)
	require.NoError(t, err)
	var res v1alpha1.DeleteActionsResult
	require.NoError(t, val.Get(&res))
	assert.Zero(t, res.Calls)
	assert.Empty(t, caller.sent)
}
