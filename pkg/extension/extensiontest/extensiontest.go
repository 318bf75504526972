// Package extensiontest runs an extension's activities the way cairn
// calls them, in a Temporal test environment (requests and answers cross
// as JSON, as they do on a real task queue), and fails the test for every
// answer cairn would refuse. Like pkg/extension, it imports nothing of
// cairn but the contract.
//
//	answers := extensiontest.Backup(t, myExtension{}, widgets, widgetJSON)
//	result, err := extensiontest.Operation(t, myExtension{}, req, nil)
//	answers = extensiontest.Restore(t, myExtension{}, widgets, widgetJSON)
package extensiontest

import (
	"encoding/json"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// Backup sends items (Kubernetes objects as JSON) of resource to h as a
// backup's collect step does, in batches of at most MaxBatchBytes, and
// returns one answer per item. It fails t when a call fails, when a call
// does not answer once per item, or when an answer breaks the contract
// (extension.CheckBackupAnswer).
func Backup(t testing.TB, h extension.BackupHandler, resource extension.Resource, items ...json.RawMessage) []extension.BackupItemAnswer {
	t.Helper()
	return calls(t, newEnv(h.BackupItems, extension.BackupItemsV1), extension.BackupItemsV1, items,
		func(batch []json.RawMessage) any {
			return extension.BackupItemsRequest{Backup: "extensiontest", Extension: "extensiontest", Resource: resource, Items: batch}
		}, extension.CheckBackupAnswer)
}

// Operation runs one operation as cairn's ExtensionOperation workflow
// does. resumeFrom, when not nil, is the progress an earlier attempt's
// last heartbeat recorded, which this attempt gets back: how a test
// checks that an operation resumes instead of starting over. The
// operation's error is returned for the test to judge.
func Operation(t testing.TB, h extension.BackupOperationHandler, req extension.BackupOperationRequest,
	resumeFrom *extension.OperationProgress) (*extension.BackupOperationResult, error) {
	t.Helper()
	return operation[extension.BackupOperationResult](t, h.BackupOperation, extension.BackupOperationV1, req, resumeFrom)
}

// RestoreOperation runs one operation a restore answer started, as
// Operation does a backup's.
func RestoreOperation(t testing.TB, h extension.RestoreOperationHandler, req extension.RestoreOperationRequest,
	resumeFrom *extension.OperationProgress) (*extension.RestoreOperationResult, error) {
	t.Helper()
	return operation[extension.RestoreOperationResult](t, h.RestoreOperation, extension.RestoreOperationV1, req, resumeFrom)
}

func operation[R any](t testing.TB, fn any, name string, req any, resumeFrom *extension.OperationProgress) (*R, error) {
	t.Helper()
	env := newEnv(fn, name)
	if resumeFrom != nil {
		env.SetHeartbeatDetails(*resumeFrom)
	}
	val, err := env.ExecuteActivity(name, req)
	if err != nil {
		return nil, err
	}
	var res R
	if err := val.Get(&res); err != nil {
		t.Fatalf("%s answered out of its contract: %v", name, err)
	}
	return &res, nil
}

// Restore sends items of resource to h as a restore's apply step does,
// and returns one answer per item; it fails t as Backup does.
func Restore(t testing.TB, h extension.RestoreHandler, resource extension.Resource, items ...json.RawMessage) []extension.RestoreItemAnswer {
	t.Helper()
	return RestoreMapped(t, h, resource, nil, items...)
}

// RestoreMapped is Restore for a restore with a namespace mapping (backup
// namespace to restored one); the items are sent as mapped.
func RestoreMapped(t testing.TB, h extension.RestoreHandler, resource extension.Resource, mapping map[string]string,
	items ...json.RawMessage) []extension.RestoreItemAnswer {
	t.Helper()
	return calls(t, newEnv(h.RestoreItems, extension.RestoreItemsV1), extension.RestoreItemsV1, items,
		func(batch []json.RawMessage) any {
			return extension.RestoreItemsRequest{Restore: "extensiontest", Backup: "extensiontest", Extension: "extensiontest",
				Resource: resource, Items: batch, NamespaceMapping: mapping}
		}, extension.CheckRestoreAnswer)
}

// calls sends items to activity name in batches, each request made by
// request, and holds every answer to check.
func calls[A any](t testing.TB, env *testsuite.TestActivityEnvironment, name string, items []json.RawMessage,
	request func([]json.RawMessage) any, check func(json.RawMessage, A) string) []A {
	t.Helper()
	var out []A
	for _, batch := range batches(items) {
		var resp struct {
			Items []A `json:"items"`
		}
		call(t, env, name, request(batch), &resp)
		if len(resp.Items) != len(batch) {
			t.Fatalf("%s answered %d items for %d", name, len(resp.Items), len(batch))
		}
		for i, ans := range resp.Items {
			if problem := check(batch[i], ans); problem != "" {
				t.Errorf("answer for item %d: cairn refuses it: %s", len(out)+i, problem)
			}
		}
		out = append(out, resp.Items...)
	}
	return out
}

// Delete sends a deleted backup's items of resource to h, twice, as a
// retried deletion may: a delete action must be idempotent, so the two
// answers must agree. It returns the second, one per item.
func Delete(t testing.TB, h extension.DeleteHandler, backup string, resource extension.Resource, items ...json.RawMessage) []extension.DeleteItemAnswer {
	t.Helper()
	env := newEnv(h.DeleteItems, extension.DeleteItemsV1)
	var out []extension.DeleteItemAnswer
	for _, batch := range batches(items) {
		req := extension.DeleteItemsRequest{Backup: backup, Extension: "extensiontest", Resource: resource, Items: batch}
		var first, again extension.DeleteItemsResponse
		call(t, env, extension.DeleteItemsV1, req, &first)
		call(t, env, extension.DeleteItemsV1, req, &again)
		if len(again.Items) != len(batch) {
			t.Fatalf("%s answered %d items for %d", extension.DeleteItemsV1, len(again.Items), len(batch))
		}
		for i := range again.Items {
			if i < len(first.Items) && first.Items[i].Error == "" && again.Items[i].Error != "" {
				t.Errorf("item %d: deleted once, then failed when deleted again (a delete action must be idempotent): %s", len(out)+i, again.Items[i].Error)
			}
		}
		out = append(out, again.Items...)
	}
	return out
}

func newEnv(fn any, name string) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	return env
}

func call(t testing.TB, env *testsuite.TestActivityEnvironment, name string, req, resp any) {
	t.Helper()
	val, err := env.ExecuteActivity(name, req)
	if err != nil {
		t.Fatalf("%s failed: %v", name, err)
	}
	if err := val.Get(resp); err != nil {
		t.Fatalf("%s answered out of its contract: %v", name, err)
	}
}

// batches groups items as cairn does: at most MaxBatchBytes of items per
// call, an item larger than that alone.
func batches(items []json.RawMessage) [][]json.RawMessage {
	var out [][]json.RawMessage
	var cur []json.RawMessage
	size := 0
	for _, it := range items {
		if len(cur) > 0 && size+len(it) > extension.MaxBatchBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur = append(cur, it)
		size += len(it)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
