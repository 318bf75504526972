package backup

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func typesEstimated(estimates ...int) []v1alpha1.ResourceType {
	var types []v1alpha1.ResourceType
	for i, e := range estimates {
		types = append(types, v1alpha1.ResourceType{Version: "v1", Resource: fmt.Sprintf("r%02d", i), Estimate: e})
	}
	return types
}

func batchNames(batches [][]v1alpha1.ResourceType) [][]string {
	return flowtest.GroupNames(batches, func(t v1alpha1.ResourceType) string { return t.Resource })
}

// TestCollectBatchesGivesLargeTypesTheirOwnActivity: a type of a page or
// more is collected alone, the largest first; the small ones share as
// many activities as collections run at once.
func TestCollectBatchesGivesLargeTypesTheirOwnActivity(t *testing.T) {
	types := typesEstimated(0, 600, 3, 0, 5000, 499, 0, 0, 1)
	assert.Equal(t, [][]string{
		{"r04"}, {"r01"},
		{"r00", "r05", "r08"}, {"r02", "r06"}, {"r03", "r07"},
	}, batchNames(collectBatches(types, 500, 3)))
}

// TestCollectBatchesBoundsTheTypesPerActivity: however many types and
// however few collections at once, an activity carries at most
// maxTypesPerCollectBefore types, and every type is collected exactly
// once.
func TestCollectBatchesBoundsTheTypesPerActivity(t *testing.T) {
	types := typesEstimated(make([]int, 200)...)
	batches := collectBatches(types, 500, 2)
	require.Len(t, batches, 7, "200 types of 32 at most")
	seen := map[string]int{}
	for _, b := range batches {
		assert.LessOrEqual(t, len(b), maxTypesPerCollectBefore)
		for _, t := range b {
			seen[t.Resource]++
		}
	}
	assert.Len(t, seen, 200)
	for r, n := range seen {
		assert.Equal(t, 1, n, "%s collected %d times", r, n)
	}
}

// TestCollectBatchesNeverMoreActivitiesThanTypes: few small types each
// get an activity when enough collections run at once.
func TestCollectBatchesNeverMoreActivitiesThanTypes(t *testing.T) {
	assert.Equal(t, [][]string{{"r00"}, {"r01"}}, batchNames(collectBatches(typesEstimated(0, 0), 500, 4)))
	assert.Empty(t, collectBatches(nil, 500, 4))
}

// TestNamespaceSharesSplitALargeTypeListedByNamespace: a type listed
// namespace by namespace is dealt into up to concurrency shares of its
// namespaces, each of at least minSharePages pages by its estimate; a
// type listed whole, or too small, is not split.
func TestNamespaceSharesSplitALargeTypeListedByNamespace(t *testing.T) {
	large := v1alpha1.ResourceType{Resource: "configmaps", Estimate: 100_000, ListedNamespaces: 10}
	assert.Equal(t, []v1alpha1.NamespaceShare{{Index: 0, Of: 4}, {Index: 1, Of: 4}, {Index: 2, Of: 4}, {Index: 3, Of: 4}},
		namespaceShares(large, 500, 4))
	assert.Len(t, namespaceShares(large, 500, 16), 10, "never more shares than namespaces")
	assert.Len(t, namespaceShares(v1alpha1.ResourceType{Estimate: 25_000, ListedNamespaces: 10}, 500, 4), 2,
		"each share lists at least minSharePages pages")
	assert.Nil(t, namespaceShares(v1alpha1.ResourceType{Estimate: 15_000, ListedNamespaces: 10}, 500, 4), "too small to split")
	assert.Nil(t, namespaceShares(v1alpha1.ResourceType{Estimate: 100_000}, 500, 4), "listed whole")
	assert.Nil(t, namespaceShares(large, 500, 1), "one collection at a time")
}

// TestLargeTypeCollectedInSharesSideBySide: the workflow collects a
// large type in shares of its namespaces, one activity each, counts the
// type done once with the sum of their items, and a type-level error
// once; with extensions planned, the type is collected by one activity.
func TestLargeTypeCollectedInSharesSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		extensions int
		shares     int
	}{{"shares", 0, 4}, {"extensions", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newBackupEnv(t)
			plan := &v1alpha1.PlanResult{Namespaces: 10, Extensions: tc.extensions, Types: []v1alpha1.ResourceType{
				{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true, Estimate: 100_000, ListedNamespaces: 10},
				{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true, Estimate: 10},
			}}
			env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(plan, nil).Once()
			var mu sync.Mutex
			var shares []v1alpha1.NamespaceShare
			env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
					res := &v1alpha1.CollectResult{}
					for _, typ := range in.Types {
						tc := v1alpha1.TypeCollected{Resource: typ.GroupResource(), Items: 5}
						if in.Namespaces != nil {
							mu.Lock()
							shares = append(shares, *in.Namespaces)
							mu.Unlock()
							tc.Items, tc.Error = in.Namespaces.Index+1, "configmaps: the server is shutting down"
						}
						res.Types = append(res.Types, tc)
					}
					return res, nil
				})
			env.OnActivity(clusterActs.CollectAdditional, mock.Anything, mock.Anything).Return(&v1alpha1.CollectAdditionalResult{}, nil).Maybe()
			env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()

			env.ExecuteWorkflow(BackupWorkflow, testRequest())
			require.NoError(t, env.GetWorkflowError())
			s := queryStatus(t, env)
			cm := s.Resources["configmaps"]
			assert.Equal(t, 2, s.ResourceTypesDone, "each type counts done once")
			assert.True(t, cm.Done)
			if tc.shares == 1 {
				assert.Empty(t, shares, "a type extensions may act on is collected whole")
				assert.Equal(t, 5, cm.Items)
				return
			}
			assert.Len(t, shares, tc.shares)
			assert.Equal(t, 1+2+3+4, cm.Items, "the shares' items add up")
			assert.Equal(t, 1, s.Errors, "the type's error counts once, not once per share")
			assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
		})
	}
}

// layoutNames names each activity's types, and its share as "@i/k".
func layoutNames(work []collectWork) []string {
	var names []string
	for _, w := range work {
		name := ""
		for i, t := range w.types {
			if i > 0 {
				name += ","
			}
			name += t.Resource
		}
		if w.share != nil {
			name += fmt.Sprintf("@%d/%d", w.share.Index, w.share.Of)
		}
		names = append(names, name)
	}
	return names
}

// TestCollectLayoutFillsTheFreeSlots: beside a large type listed whole,
// the small types take the slots it leaves, so every activity starts at
// once; with none large, they spread over all the slots.
func TestCollectLayoutFillsTheFreeSlots(t *testing.T) {
	types := typesEstimated(0, 10_000, 3, 0, 1, 0, 2)
	assert.Equal(t, []string{"r01", "r00,r04", "r02,r05", "r03,r06"}, layoutNames(collectLayout(types, 500, 4, true, true)))
	assert.Equal(t, []string{"r00,r04", "r01,r05", "r02", "r03"},
		layoutNames(collectLayout(typesEstimated(0, 0, 0, 0, 0, 0), 500, 4, true, true)))
	assert.Empty(t, collectLayout(nil, 500, 4, true, true))
}

// TestCollectLayoutGivesSharesEverySlot: a large type listed in shares
// gets a share for each collection at once, and the small types come
// after them, dealt into as many batches; without shares, the type
// takes one slot and the small types the others.
func TestCollectLayoutGivesSharesEverySlot(t *testing.T) {
	types := typesEstimated(0, 100_000, 3, 0, 1, 0, 2)
	types[1].ListedNamespaces = 100
	assert.Equal(t, []string{"r01@0/4", "r01@1/4", "r01@2/4", "r01@3/4", "r00,r05", "r02,r06", "r03", "r04"},
		layoutNames(collectLayout(types, 500, 4, true, true)))
	assert.Equal(t, []string{"r01", "r00,r04", "r02,r05", "r03,r06"}, layoutNames(collectLayout(types, 500, 4, false, true)))
}

// TestCollectLayoutPutsSmallTypesSecondWhenSlotsRunOut: with more large
// types than slots, the small types come right after the largest type's
// activity, ahead of the other large ones, largest first.
func TestCollectLayoutPutsSmallTypesSecondWhenSlotsRunOut(t *testing.T) {
	types := typesEstimated(600, 0, 700, 800, 3, 900, 1000)
	assert.Equal(t, []string{"r06", "r01", "r04", "r05", "r03", "r02", "r00"},
		layoutNames(collectLayout(types, 500, 4, true, true)))
}

// TestCollectLayoutBoundsTheTypesPerActivity: however many types and
// however few collections at once, an activity carries at most
// maxTypesPerCollect types, and every type is collected exactly once.
func TestCollectLayoutBoundsTheTypesPerActivity(t *testing.T) {
	work := collectLayout(typesEstimated(make([]int, 200)...), 500, 2, true, true)
	require.Len(t, work, 4, "200 types of 64 at most")
	seen := map[string]int{}
	for _, w := range work {
		assert.LessOrEqual(t, len(w.types), maxTypesPerCollect)
		for _, t := range w.types {
			seen[t.Resource]++
		}
	}
	assert.Len(t, seen, 200)
	for r, n := range seen {
		assert.Equal(t, 1, n, "%s collected %d times", r, n)
	}
}

// TestCollectLayoutKeepsTheSmallTypesTogether: since an activity lists
// its types side by side, the small types share as few activities as
// hold them, after the largest type's, whatever slots are free.
func TestCollectLayoutKeepsTheSmallTypesTogether(t *testing.T) {
	types := typesEstimated(0, 10_000, 3, 0, 1, 0, 2)
	assert.Equal(t, []string{"r01", "r00,r02,r03,r04,r05,r06"}, layoutNames(collectLayout(types, 500, 4, true, false)))

	types[1].ListedNamespaces = 100
	types[1].Estimate = 100_000
	assert.Equal(t, []string{"r01@0/4", "r01@1/4", "r01@2/4", "r01@3/4", "r00,r02,r03,r04,r05,r06"},
		layoutNames(collectLayout(types, 500, 4, true, false)))

	work := collectLayout(typesEstimated(make([]int, 200)...), 500, 4, true, false)
	require.Len(t, work, 4, "200 types, 64 at most in an activity")
	for _, w := range work {
		assert.LessOrEqual(t, len(w.types), maxTypesPerCollect)
	}
}

// TestCollectionsStampSegmentsWithTheBackupsStart: every collection is
// given the backup's start time, the one finalize stamps the tarball
// with, so that finalize can splice the segments they store.
func TestCollectionsStampSegmentsWithTheBackupsStart(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	var mu sync.Mutex
	var stamps []*time.Time
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
			mu.Lock()
			stamps = append(stamps, in.StartTime)
			mu.Unlock()
			return collected(1)(ctx, in)
		})
	var finalized *time.Time
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
			finalized = in.Status.StartTime
			return &v1alpha1.FinalizeResult{}, nil
		}).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	require.NotNil(t, finalized)
	require.NotEmpty(t, stamps)
	for _, s := range stamps {
		require.NotNil(t, s)
		assert.True(t, s.Equal(*finalized), "a collection stamps %s, finalize %s", s, finalized)
	}
}
