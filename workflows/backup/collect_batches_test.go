package backup

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
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
// maxTypesPerCollect types, and every type is collected exactly once.
func TestCollectBatchesBoundsTheTypesPerActivity(t *testing.T) {
	types := typesEstimated(make([]int, 200)...)
	batches := collectBatches(types, 500, 2)
	require.Len(t, batches, 7, "200 types of 32 at most")
	seen := map[string]int{}
	for _, b := range batches {
		assert.LessOrEqual(t, len(b), maxTypesPerCollect)
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
