package extcall

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

func TestSplitBoundsBatchesInBytes(t *testing.T) {
	half := extension.MaxBatchBytes / 2
	sizes := []int{half, half, 1, extension.MaxBatchBytes * 2, 10, 10}
	batches := Split(sizes, func(i int) bool { return i != 4 })
	assert.Equal(t, [][]int{{0, 1}, {2}, {3}, {5}}, batches, "in order, within the bound; an oversized item alone; unselected left out")
}

type fixed struct {
	ids    []string
	answer json.RawMessage
	err    error
}

func (f *fixed) Call(_ context.Context, id string, _ v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	f.ids = append(f.ids, id)
	return f.answer, f.err
}

// TestDoNamesTheCallByItsItems and tells the extension's failures, which
// fail the items, from Temporal's, which the step retries.
func TestDoNamesTheCallByItsItems(t *testing.T) {
	req := Request{Run: "b", Extension: v1alpha1.Extension{Name: "x"}, Activity: extension.BackupItemsV1, Scope: "configmaps",
		Items: Batch{[]byte(`{"a":1}`)}, Payload: map[string]int{"n": 1}}
	c := &fixed{answer: json.RawMessage(`{"items":[{"error":"no"}]}`)}
	answers, failed, err := Do[extension.BackupItemAnswer](context.Background(), c, req)
	require.NoError(t, err)
	assert.Empty(t, failed)
	assert.Equal(t, []extension.BackupItemAnswer{{Error: "no"}}, answers)
	_, _, _ = Do[extension.BackupItemAnswer](context.Background(), c, req)
	other := req
	other.Items = Batch{[]byte(`{"a":2}`)}
	_, _, _ = Do[extension.BackupItemAnswer](context.Background(), c, other)
	require.Len(t, c.ids, 3)
	assert.Equal(t, c.ids[0], c.ids[1], "the same items, the same call")
	assert.NotEqual(t, c.ids[0], c.ids[2], "other items, another call")
	assert.Regexp(t, `^extension/b/x/configmaps/[0-9a-f]{20}$`, c.ids[0])

	for name, tc := range map[string]struct {
		c      *fixed
		failed string
		err    bool
	}{
		"refused":     {c: &fixed{err: temporal.NewNonRetryableApplicationError("refused it", v1alpha1.ErrTypeExtension, nil)}, failed: "refused it"},
		"too few":     {c: &fixed{answer: json.RawMessage(`{"items":[]}`)}, failed: "answered out of its contract: want 1 answers, got 0"},
		"not JSON":    {c: &fixed{answer: json.RawMessage(`[`)}, failed: "answered out of its contract"},
		"unreachable": {c: &fixed{err: errors.New("connection refused")}, err: true},
	} {
		t.Run(name, func(t *testing.T) {
			_, failed, err := Do[extension.BackupItemAnswer](context.Background(), tc.c, req)
			assert.Equal(t, tc.err, err != nil, "%v", err)
			assert.Contains(t, failed, tc.failed)
		})
	}
}

func TestActionsSelectByTypeNamespaceAndLabels(t *testing.T) {
	exts := []v1alpha1.Extension{
		{Name: "a", Backup: &v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}, IncludedNamespaces: []string{"shop-*"}, LabelSelector: "app=db"}},
		{Name: "b", Restore: &v1alpha1.ExtensionSelector{Resources: []string{"*"}}},
		{Name: "c", Backup: &v1alpha1.ExtensionSelector{Resources: []string{"pods"}}},
	}
	backup, err := Actions(exts, "configmaps", BackupSelector)
	require.NoError(t, err)
	require.Len(t, backup, 1)
	assert.True(t, backup[0].Selects("shop-eu", map[string]string{"app": "db"}))
	assert.False(t, backup[0].Selects("shop-eu", map[string]string{"app": "web"}))
	assert.False(t, backup[0].Selects("kube-system", map[string]string{"app": "db"}))
	restore, err := Actions(exts, "configmaps", RestoreSelector)
	require.NoError(t, err)
	require.Len(t, restore, 1)
	assert.Equal(t, "b", restore[0].Ext.Name)
}
