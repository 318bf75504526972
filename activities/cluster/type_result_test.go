package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/location"
)

// TestTypeResultsAreStoredOnlyWhenTheyReport: a result with nothing to
// report costs no write; one with a warning, an error or an exclusion is
// stored; a retried attempt with nothing to report removes what an
// earlier attempt stored, and minds no result being there.
func TestTypeResultsAreStoredOnlyWhenTheyReport(t *testing.T) {
	ctx := context.Background()
	loc, err := location.OpenPlain(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	defer loc.Close()
	key := location.Backup("b").TypeResult("configmaps")
	stored := func() bool {
		keys, err := loc.Keys(ctx, location.Backup("b").TypeResults())
		require.NoError(t, err)
		return len(keys) > 0
	}

	require.NoError(t, storeTypeResult(ctx, loc, key, TypeResult{Resource: "configmaps", Items: 500}, false))
	assert.False(t, stored(), "items alone are nothing to report")

	for _, tr := range []TypeResult{
		{Resource: "configmaps", Warnings: []string{"listing outlived etcd's compaction"}},
		{Resource: "configmaps", Errors: []string{"the server could not find the requested resource"}},
		{Resource: "configmaps", Excluded: []ExcludedItem{{Namespace: "shop", Name: "cm", Label: "cairn.io/exclude-from-backup"}}, ExcludedTotal: 1},
		{Resource: "configmaps", ExcludedTotal: 101},
	} {
		require.NoError(t, storeTypeResult(ctx, loc, key, tr, false))
		var got TypeResult
		require.NoError(t, loc.ReadJSON(ctx, key, &got))
		assert.Equal(t, tr, got)
	}

	require.NoError(t, storeTypeResult(ctx, loc, key, TypeResult{Resource: "configmaps"}, false))
	assert.True(t, stored(), "a first attempt writes nothing, so it removes nothing")
	require.NoError(t, storeTypeResult(ctx, loc, key, TypeResult{Resource: "configmaps"}, true))
	assert.False(t, stored(), "the retry found nothing to report: the earlier attempt's result is gone")
	require.NoError(t, storeTypeResult(ctx, loc, key, TypeResult{Resource: "configmaps"}, true), "nothing to remove is no error")
}
