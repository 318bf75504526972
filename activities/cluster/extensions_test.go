package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// fakeCaller answers extension calls in process: answer builds the
// answer to one request, or fails the call.
type fakeCaller struct {
	mu     sync.Mutex
	ids    []string
	reqs   []extension.BackupItemsRequest
	sizes  []int
	answer func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error)
}

func (f *fakeCaller) Call(_ context.Context, id string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	var req extension.BackupItemsRequest
	if err := json.Unmarshal(in.Request, &req); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.ids, f.reqs = append(f.ids, id), append(f.reqs, req)
	size := 0
	for _, it := range req.Items {
		size += len(it)
	}
	f.sizes = append(f.sizes, size)
	f.mu.Unlock()
	resp, err := f.answer(req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// annotate answers each item with an annotation "seen" that lists the
// extensions it went through.
func annotate(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	resp := &extension.BackupItemsResponse{}
	for _, raw := range req.Items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		meta := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		seen, _ := ann["seen"].(string)
		ann["seen"] = strings.TrimPrefix(seen+","+req.Extension, ",")
		meta["annotations"] = ann
		out, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, extension.BackupItemAnswer{Item: out})
	}
	return resp, nil
}

func (f *collectFixture) register(caller *fakeCaller, exts ...v1alpha1.Extension) {
	f.acts.Extensions = caller
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	require.NoError(f.t, loc.WriteJSON(context.Background(), location.Backup("b").Plan(),
		StoredPlan{Spec: f.spec, AllNamespaces: true, Namespaces: []string{"shop"}, Types: f.in.Types, Extensions: exts}))
}

func ext(name string, sel v1alpha1.ExtensionSelector) v1alpha1.Extension {
	return v1alpha1.Extension{Name: name, TaskQueue: name + "-queue", Backup: &sel}
}

// storedAnnotations reads each stored object's "seen" annotation.
func (f *collectFixture) storedAnnotations() map[string]string {
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup("b").PartsPrefix("configmaps"))
	require.NoError(f.t, err)
	out := map[string]string{}
	for _, k := range keys {
		require.NoError(f.t, loc.ReadLines(context.Background(), k, func(line []byte) error {
			var obj struct {
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			require.NoError(f.t, json.Unmarshal(line, &obj))
			out[obj.Metadata.Name] = obj.Metadata.Annotations["seen"]
			return nil
		}))
	}
	return out
}

// TestCollectStoresWhatExtensionsAnswer: every item goes through the
// extensions that select it, in registration order, and what is stored
// is the last answer; items no selector picks are stored as listed.
func TestCollectStoresWhatExtensionsAnswer(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.labels = map[string]map[string]string{"cm-03-1": {"app": "db"}, "cm-07-4": {"app": "db"}}
	caller := &fakeCaller{answer: annotate}
	f.register(caller,
		ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}, LabelSelector: "app=db"}),
		ext("second", v1alpha1.ExtensionSelector{Resources: []string{"*"}, IncludedNamespaces: []string{"shop"}}),
		ext("elsewhere", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}, IncludedNamespaces: []string{"other"}}),
		ext("secrets-only", v1alpha1.ExtensionSelector{Resources: []string{"secrets"}}))
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, pages*perPage, res.Items)
	assert.Zero(t, res.ItemErrors)

	seen := f.storedAnnotations()
	require.Len(t, seen, pages*perPage)
	assert.Equal(t, "first,second", seen["cm-03-1"], "in registration order, each on the one before's answer")
	assert.Equal(t, "first,second", seen["cm-07-4"])
	assert.Equal(t, "second", seen["cm-00-0"])
	for _, r := range caller.reqs {
		assert.Contains(t, []string{"first", "second"}, r.Extension, "no call to an extension that selects none of the items")
		assert.Equal(t, extension.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}, r.Resource)
		assert.Equal(t, "b", r.Backup)
	}
	f.assertEveryObjectOnce()
}

// TestCollectBatchesExtensionCallsByBytes: a page whose items outgrow
// one request is sent in several, each within MaxBatchBytes.
func TestCollectBatchesExtensionCallsByBytes(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.pad = 200 << 10
	caller := &fakeCaller{answer: annotate}
	f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	_, err := f.attempt(nil)
	require.NoError(t, err)
	items := 0
	for i, size := range caller.sizes {
		assert.LessOrEqual(t, size, extension.MaxBatchBytes)
		items += len(caller.reqs[i].Items)
	}
	assert.Equal(t, pages*perPage, items, "every item is sent once")
	assert.Greater(t, len(caller.reqs), pages, "a page of %d items of 200 KiB takes more than one call", perPage)
}

// TestCollectLeavesOutWhatExtensionsFail: an item the extension fails,
// answers with another object for, or asks too much for, is left out and
// named; a call refused as a whole, or answered with the wrong number of
// answers, fails each item of it. The others are stored.
func TestCollectLeavesOutWhatExtensionsFail(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.pad = onePagePerCall
	caller := &fakeCaller{answer: func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		resp, _ := annotate(req)
		for i, raw := range req.Items {
			switch {
			case strings.Contains(string(raw), `"cm-00-`):
				return nil, temporal.NewNonRetryableApplicationError("refused BackupItems: broken", v1alpha1.ErrTypeExtension, nil)
			case strings.Contains(string(raw), `"cm-01-`):
				return &extension.BackupItemsResponse{}, nil
			case strings.Contains(string(raw), `"cm-02-1"`):
				resp.Items[i] = extension.BackupItemAnswer{Error: "cannot"}
			case strings.Contains(string(raw), `"cm-02-2"`):
				resp.Items[i].Item = []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"cm-02-2","namespace":"shop"}}`)
			case strings.Contains(string(raw), `"cm-02-3"`):
				resp.Items[i].Item = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-02-3","namespace":"kube-system"}}`)
			case strings.Contains(string(raw), `"cm-02-4"`):
				resp.Items[i].AdditionalItems = make([]extension.ObjectRef, extension.MaxAdditionalItems+1)
			case strings.Contains(string(raw), `"cm-03-0"`):
				resp.Items[i].Item = []byte(`[1,2]`)
			}
		}
		return resp, nil
	}}
	f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	res, err := f.attempt(nil)
	require.NoError(t, err)
	failed := 2*perPage + 5
	assert.Equal(t, failed, res.ItemErrors)
	assert.Equal(t, pages*perPage-failed, res.Items)
	seen := f.storedAnnotations()
	for _, gone := range []string{"cm-00-0", "cm-01-4", "cm-02-1", "cm-02-2", "cm-02-3", "cm-02-4", "cm-03-0"} {
		assert.NotContains(t, seen, gone)
	}
	assert.Equal(t, "first", seen["cm-02-0"])

	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	var tr TypeResult
	require.NoError(t, loc.ReadJSON(context.Background(), location.Backup("b").TypeResult("configmaps"), &tr))
	joined := strings.Join(tr.Errors, "\n")
	for _, want := range []string{
		"shop/cm-00-0: extension first: refused BackupItems: broken",
		"shop/cm-01-0: extension first: answered out of its contract: want 5 answers",
		"shop/cm-02-1: extension first: cannot",
		"shop/cm-02-2: extension first: answered with Secret shop/cm-02-2, another object",
		"shop/cm-02-3: extension first: answered with ConfigMap kube-system/cm-02-3, another object",
		"shop/cm-02-4: extension first: 101 additional items, more than 100",
		"shop/cm-03-0: extension first: its item is not a Kubernetes object",
	} {
		assert.Contains(t, joined, want)
	}
}

// onePagePerCall pads the scripted ConfigMaps so that a page's five
// fill one call.
const onePagePerCall = 100 << 10

// TestCollectRetryAsksForTheSameCalls: pages wait for their extension
// calls unstored, and the heartbeat promises none of them meanwhile; a
// step that dies while it waits asks, when retried, for the calls of the
// same IDs, so the call workflows that ran are found instead of made
// again, and every object is stored once.
func TestCollectRetryAsksForTheSameCalls(t *testing.T) {
	clean := newCollectFixture(t)
	clean.lister.pad = onePagePerCall
	cleanCaller := &fakeCaller{answer: annotate}
	clean.register(cleanCaller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	_, err := clean.attempt(nil)
	require.NoError(t, err)
	require.Len(t, uniq(cleanCaller.ids), pages, "one call per page")

	f := newCollectFixture(t)
	f.lister.pad = onePagePerCall
	f.acts.callBeat = time.Millisecond
	f.beat = make(chan struct{}, 1)
	var failed atomic.Bool
	caller := &fakeCaller{answer: func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		if strings.Contains(string(req.Items[0]), `"cm-03-0"`) && failed.CompareAndSwap(false, true) {
			<-f.beat // the step heartbeats while it waits
			return nil, errors.New("Temporal unreachable")
		}
		return annotate(req)
	}}
	f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	_, err = f.attempt(nil)
	require.Error(t, err)
	require.NotEmpty(t, f.beats)
	for _, beat := range f.beats {
		assert.Equal(t, TypeProgress{Resource: "configmaps"}, beat.Current, "no heartbeat moves past pages whose calls were not answered")
	}
	var resume *CollectProgress
	if len(f.beats) > 0 {
		resume = &f.beats[len(f.beats)-1]
	}
	first := uniq(caller.ids)
	caller.ids = nil
	_, err = f.attempt(resume)
	require.NoError(t, err)
	retried := uniq(caller.ids)
	assert.Equal(t, uniq(cleanCaller.ids), retried, "the retry asks for the calls a clean run makes, by the same IDs")
	for id := range first {
		assert.True(t, retried[id], "the retry asks again for %s, which it was waiting on", id)
	}
	f.assertEveryObjectOnce()
}

func uniq(s []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range s {
		out[v] = true
	}
	return out
}

// TestCollectRecordsAdditionalItems: the additional items an answer asks
// for are recorded beside the item's page, for CollectAdditional; a
// malformed one fails its item.
func TestCollectRecordsAdditionalItems(t *testing.T) {
	f := newCollectFixture(t)
	caller := &fakeCaller{answer: func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		resp, _ := annotate(req)
		for i, raw := range req.Items {
			switch {
			case strings.Contains(string(raw), `"cm-02-1"`):
				resp.Items[i].AdditionalItems = []extension.ObjectRef{{Resource: "secrets", Namespace: "shop", Name: "db"}}
			case strings.Contains(string(raw), `"cm-02-2"`):
				resp.Items[i].AdditionalItems = []extension.ObjectRef{{Resource: "secrets", Namespace: "shop"}}
			}
		}
		return resp, nil
	}}
	f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.ItemErrors, "the item with a nameless additional item fails")

	keys := location.Backup("b")
	refs := readJSONLines[extension.ObjectRef](t, f.in.Location, keys.AdditionalRefs(keys.Part("configmaps", 0, 2)))
	assert.Equal(t, []extension.ObjectRef{{Resource: "secrets", Namespace: "shop", Name: "db"}}, refs)
}

// readJSONLines reads an object of JSON lines from a location.
func readJSONLines[T any](t *testing.T, locationURL, key string) []T {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), locationURL)
	require.NoError(t, err)
	defer loc.Close()
	var out []T
	require.NoError(t, loc.ReadLines(context.Background(), key, func(line []byte) error {
		var v T
		require.NoError(t, json.Unmarshal(line, &v))
		out = append(out, v)
		return nil
	}))
	return out
}

// TestCollectRecordsOperations: an operation an answer starts is
// recorded beside the item's page with what the operations step needs
// (extension, ID, item, items to update, data) and counted; an operation
// without an ID, with an ID of control characters, or with too much data
// fails its item.
func TestCollectRecordsOperations(t *testing.T) {
	f := newCollectFixture(t)
	caller := &fakeCaller{answer: func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		resp, _ := annotate(req)
		for i, raw := range req.Items {
			switch {
			case strings.Contains(string(raw), `"cm-02-1"`):
				resp.Items[i].Operation = &extension.OperationStart{ID: "export-1", Data: json.RawMessage(`{"to":"s3"}`),
					ItemsToUpdate: []extension.ObjectRef{{Resource: "configmaps", Namespace: "shop", Name: "cm-02-1"}}}
			case strings.Contains(string(raw), `"cm-02-2"`):
				resp.Items[i].Operation = &extension.OperationStart{}
			case strings.Contains(string(raw), `"cm-02-3"`):
				resp.Items[i].Operation = &extension.OperationStart{ID: "a\nb"}
			case strings.Contains(string(raw), `"cm-02-4"`):
				resp.Items[i].Operation = &extension.OperationStart{ID: "big", Data: json.RawMessage(`"` + strings.Repeat("x", extension.MaxOperationDataBytes) + `"`)}
			}
		}
		return resp, nil
	}}
	f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, 3, res.ItemErrors, "the malformed operations fail their items")
	assert.Equal(t, 1, res.Operations)

	keys := location.Backup("b")
	recs := readJSONLines[extcall.OperationRecord](t, f.in.Location, keys.ExtensionOperations(keys.Part("configmaps", 0, 2)))
	require.Len(t, recs, 1)
	assert.Equal(t, "first", recs[0].Extension)
	assert.Equal(t, "export-1", recs[0].ID)
	assert.Equal(t, extension.ObjectRef{Resource: "configmaps", Namespace: "shop", Name: "cm-02-1"}, recs[0].Item)
	assert.Equal(t, extension.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}, recs[0].Resource)
	assert.JSONEq(t, `{"to":"s3"}`, string(recs[0].Data))
	assert.Len(t, recs[0].ItemsToUpdate, 1)
}

// TestCollectTellsExtensionsOfADryRun: a dry run's requests say so, and
// a real backup's do not.
func TestCollectTellsExtensionsOfADryRun(t *testing.T) {
	for _, dry := range []bool{false, true} {
		f := newCollectFixture(t)
		f.in.DryRun = dry
		caller := &fakeCaller{answer: annotate}
		f.register(caller, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
		_, err := f.attempt(nil)
		require.NoError(t, err)
		require.NotEmpty(t, caller.reqs)
		for _, r := range caller.reqs {
			assert.Equal(t, dry, r.DryRun)
		}
	}
}

// TestCollectRestartDropsTheTypesOperations: a type listed again from
// the start drops the operations recorded for its earlier pages, also
// those of a page the new listing does not reach.
func TestCollectRestartDropsTheTypesOperations(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failOn["t4"] = apierrors.NewResourceExpired("continue token too old")
	f.register(&fakeCaller{answer: annotate}, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Backup("b")
	stale := keys.ExtensionOperations(keys.Part("configmaps", 0, 99))
	require.NoError(t, loc.WriteAll(context.Background(), stale, []byte(`{"extension":"first","id":"old"}`+"\n")))
	res, err := f.attempt(nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Restarts)
	exists, err := loc.Exists(context.Background(), stale)
	require.NoError(t, err)
	assert.False(t, exists, "no operation of the first listing survives it")
}
