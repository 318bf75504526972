package store

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestFinalizeStoresUpdatedItemsInPlaceOfCollected: an item an
// operation's updated parts hold again is in the tarball once, as read
// again; the others as collected. The extensions' operations follow the
// volumes' in operations.json, a failed one is a result error naming its
// item, and without volumes there is no volumes.json.
func TestFinalizeStoresUpdatedItemsInPlaceOfCollected(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	const cmA2 = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"},"data":{"k":"2"}}`
	f.write(t, b1.UpdatedPart("configmaps", 0), cmA2+"\n")
	exported := v1alpha1.Operation{ID: "export-a", Kind: v1alpha1.OperationKindExtension, Extension: "x", Phase: v1alpha1.OperationCompleted,
		Item: &v1alpha1.ItemRef{Resource: "configmaps", Namespace: "shop", Name: "a"}}
	failed := v1alpha1.Operation{ID: "export-b", Kind: v1alpha1.OperationKindExtension, Extension: "x", Phase: v1alpha1.OperationFailed,
		Item: &v1alpha1.ItemRef{Resource: "configmaps", Namespace: "shop", Name: "b"}, Error: "extension x: operation failed: no disk"}
	var lines []byte
	for _, op := range []v1alpha1.Operation{exported, failed} {
		line, err := json.Marshal(op)
		require.NoError(t, err)
		lines = append(append(lines, line...), '\n')
	}
	f.write(t, b1.OperationsRun(), string(lines))

	res, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.Equal(t, 4, res.Items, "the updated item replaces its collected copy")

	got := f.tarballObjects(t)
	assert.Equal(t, cmA2, got["resources/configmaps/namespaces/shop/a.json"])
	assert.Equal(t, cmB, got["resources/configmaps/namespaces/shop/b.json"])

	var ops v1alpha1.OperationsFile
	f.readJSON(t, b1.Operations(), &ops)
	assert.Equal(t, []v1alpha1.Operation{exported, failed}, ops.Operations)
	assert.False(t, f.exists(t, b1.Volumes()))
	var results v1alpha1.BackupResults
	f.readJSON(t, b1.Results(), &results)
	assert.Contains(t, results.Errors, v1alpha1.ResultEntry{Resource: "configmaps", Namespace: "shop", Name: "b",
		Message: "extension x: operation failed: no disk"})
}
