package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// emptyTypes are n types the scripted lister answers with one empty page.
func emptyTypes(n int) []v1alpha1.ResourceType {
	types := make([]v1alpha1.ResourceType, n)
	for i := range types {
		types[i] = v1alpha1.ResourceType{Version: "v1", Resource: fmt.Sprintf("things%d", i), Kind: "Thing", Namespaced: true}
	}
	return types
}

// TestCollectBatchListsTypesSideBySide: the types of a batch are listed
// typesSideBySide at once, never more, and each once.
func TestCollectBatchListsTypesSideBySide(t *testing.T) {
	f := newCollectFixture(t)
	f.in.Types = emptyTypes(typesSideBySide + 2)
	f.writePlan(true, "shop")
	var (
		mu           sync.Mutex
		now, most    int
		allIn        = make(chan struct{})
		barrierReady = false
	)
	f.lister.before = func(ctx context.Context, _ string) error {
		mu.Lock()
		now++
		most = max(most, now)
		if now == typesSideBySide && !barrierReady {
			barrierReady = true
			close(allIn)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			now--
			mu.Unlock()
		}()
		// The first requests wait for each other: listed one after the
		// other, the first would wait until the activity gives up.
		select {
		case <-allIn:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	res, err := f.attemptBatch(nil)
	require.NoError(t, err)
	assert.Equal(t, typesSideBySide, most, "as many types as slots listed at once, never more")
	require.Len(t, res.Types, len(f.in.Types))
	for i, typ := range f.in.Types {
		assert.Equal(t, typ.GroupResource(), res.Types[i].Resource, "the result is in the batch's order")
	}
	var names []string
	for _, typ := range f.in.Types {
		names = append(names, typ.Resource)
	}
	assert.ElementsMatch(t, names, f.lister.calls, "each type listed once")
}

// TestCollectBatchRunsATypeExtensionsActOnAlone: while a type whose items
// go to extensions is collected, no other type of the batch is.
func TestCollectBatchRunsATypeExtensionsActOnAlone(t *testing.T) {
	f := newCollectFixture(t)
	f.in.Types = append(f.in.Types, emptyTypes(3)...)
	f.register(&fakeCaller{answer: annotate}, ext("first", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	res, err := f.attemptBatch(nil)
	require.NoError(t, err)
	require.Len(t, f.lister.calls, pages+3)
	assert.Equal(t, []string{"", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}, f.lister.calls[:pages],
		"configmaps' pages are listed before any other type")
	assert.ElementsMatch(t, []string{"things0", "things1", "things2"}, f.lister.calls[pages:])
	assert.Equal(t, pages*perPage, res.Types[0].Items)
	assert.Len(t, f.storedAnnotations(), pages*perPage)
}

// TestBatchHeartbeatKeepsTheFirstTypesInOrder: the heartbeat's Done are
// the batch's first types, in order, and Current the one after them, as
// a worker from before types were listed side by side reads them; the
// types done after one not done are in Later, the other types in flight
// in Others.
func TestBatchHeartbeatKeepsTheFirstTypesInOrder(t *testing.T) {
	types := emptyTypes(6)
	b := &batch{in: v1alpha1.CollectInput{Types: types}, done: make([]*v1alpha1.TypeCollected, len(types)), inFlight: map[int]TypeProgress{}}
	doneAt := func(i int) {
		b.done[i] = &v1alpha1.TypeCollected{Resource: types[i].GroupResource(), Items: i}
		delete(b.inFlight, i)
	}
	for i := range 5 {
		b.inFlight[i] = TypeProgress{Resource: types[i].GroupResource(), Part: i}
	}
	doneAt(0)
	doneAt(3)

	p := b.details()
	assert.Equal(t, []v1alpha1.TypeCollected{{Resource: "things0"}}, p.Done)
	assert.Equal(t, TypeProgress{Resource: "things1", Part: 1}, p.Current)
	assert.Equal(t, []v1alpha1.TypeCollected{{Resource: "things3", Items: 3}}, p.Later)
	assert.Equal(t, []TypeProgress{{Resource: "things2", Part: 2}, {Resource: "things4", Part: 4}}, p.Others)

	doneAt(1)
	doneAt(2)
	p = b.details()
	assert.Len(t, p.Done, 4, "things3, done before, joins the first types once those before it are")
	assert.Empty(t, p.Later)
	assert.Equal(t, TypeProgress{Resource: "things4", Part: 4}, p.Current)
	assert.Empty(t, p.Others)
}

// TestCollectBatchResumesTypesDoneOutOfOrder: a retry skips every type
// the heartbeat counts done, before or after one that is not, and goes
// on with each type in flight from where it stood.
func TestCollectBatchResumesTypesDoneOutOfOrder(t *testing.T) {
	f := newCollectFixture(t)
	configmaps := f.in.Types[0]
	f.in.Types = append([]v1alpha1.ResourceType{configmaps}, emptyTypes(3)...)
	// An attempt stored configmaps' first four pages and collected
	// things1 before it was lost.
	first, err := f.attempt(nil)
	require.NoError(t, err)
	require.Equal(t, pages*perPage, first.Items)
	last := CollectProgress{
		Current: TypeProgress{Resource: "configmaps", Part: 4, Continue: "t4", Items: 4 * perPage, Parts: 4},
		Later:   []v1alpha1.TypeCollected{{Resource: "things1"}},
	}

	f.lister.calls = nil
	res, err := f.attemptBatch(&last)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"t4", "t5", "t6", "t7", "t8", "t9", "things0", "things2"}, f.lister.calls,
		"configmaps goes on at its fifth page, things1 is not listed again")
	require.Len(t, res.Types, 4)
	assert.Equal(t, v1alpha1.TypeCollected{Resource: "configmaps", Items: pages * perPage, Parts: pages}, res.Types[0])
	assert.Equal(t, "things1", res.Types[2].Resource)
	f.assertEveryObjectOnce()
}
