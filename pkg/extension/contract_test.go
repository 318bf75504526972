package extension

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
)

type names struct{ registered []string }

func (n *names) RegisterActivity(any) { n.registered = append(n.registered, "unnamed") }
func (n *names) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	n.registered = append(n.registered, o.Name)
}
func (n *names) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}

type both struct{}

func (both) BackupItems(context.Context, BackupItemsRequest) (*BackupItemsResponse, error) {
	return nil, nil
}
func (both) BackupOperation(context.Context, BackupOperationRequest) (*BackupOperationResult, error) {
	return nil, nil
}
func (both) DeleteItems(context.Context, DeleteItemsRequest) (*DeleteItemsResponse, error) {
	return nil, nil
}
func (both) RestoreItems(context.Context, RestoreItemsRequest) (*RestoreItemsResponse, error) {
	return nil, nil
}

// TestRegisterUsesTheContractsNames: what another language's extension
// must register under is what a Go one is registered under.
func TestRegisterUsesTheContractsNames(t *testing.T) {
	n := &names{}
	RegisterBackup(n, both{})
	RegisterRestore(n, both{})
	RegisterDelete(n, both{})
	assert.Equal(t, []string{"cairn.extension.v1.BackupItems", "cairn.extension.v1.BackupOperation", "cairn.extension.v1.RestoreItems",
		"cairn.extension.v1.DeleteItems"}, n.registered)
}

// TestAnswersDecodeAsDocumented: the JSON of docs/extensions.md decodes
// into the types, so the prose and the code say the same.
func TestAnswersDecodeAsDocumented(t *testing.T) {
	var b BackupItemsResponse
	require.NoError(t, json.Unmarshal([]byte(`{"items":[{"item":{"kind":"Widget"}},{},{"error":"cannot"},
		{"additionalItems":[{"group":"","resource":"configmaps","namespace":"shop","name":"widget-config"}]},
		{"operation":{"id":"export-1","itemsToUpdate":[{"group":"demo.cairn.io","resource":"widgets","namespace":"shop","name":"w"}],"data":{"bucket":"b"}}}]}`), &b))
	require.Len(t, b.Items, 5)
	require.NotNil(t, b.Items[4].Operation)
	assert.Equal(t, "export-1", b.Items[4].Operation.ID)
	assert.Equal(t, ObjectRef{Group: "demo.cairn.io", Resource: "widgets", Namespace: "shop", Name: "w"}, b.Items[4].Operation.ItemsToUpdate[0])
	assert.JSONEq(t, `{"bucket":"b"}`, string(b.Items[4].Operation.Data))
	assert.JSONEq(t, `{"kind":"Widget"}`, string(b.Items[0].Item))
	assert.Equal(t, "cannot", b.Items[2].Error)
	assert.Equal(t, ObjectRef{Resource: "configmaps", Namespace: "shop", Name: "widget-config"}, b.Items[3].AdditionalItems[0])

	var r RestoreItemsResponse
	require.NoError(t, json.Unmarshal([]byte(`{"items":[{"skip":"not here"},{"error":"no"}]}`), &r))
	assert.Equal(t, []RestoreItemAnswer{{Skip: "not here"}, {Error: "no"}}, r.Items)
}
