package restore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

func openTempLocation(t *testing.T) *location.Location {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), "file://"+t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	return loc
}

// The streamed results.json decodes to what was written, item for item.
func TestResultsWriterStreamsWhatRestoreResultsDecodes(t *testing.T) {
	ctx := context.Background()
	loc := openTempLocation(t)
	want := v1alpha1.RestoreResults{
		Skipped:  []v1alpha1.SkippedResource{{Resource: "events", Reason: "never restored"}},
		Warnings: []string{"configmaps shop/a: exists and differs"},
	}
	w, err := newResultsWriter(ctx, loc, "results.json")
	require.NoError(t, err)
	for i := range 1000 {
		o := v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i), Result: v1alpha1.ItemRestored}
		want.Items = append(want.Items, o)
		require.NoError(t, w.add(o))
	}
	exists, err := loc.Exists(ctx, "results.json")
	require.NoError(t, err)
	assert.False(t, exists, "nothing is visible before close")
	require.NoError(t, w.close(want.Skipped, want.Warnings))

	var got v1alpha1.RestoreResults
	require.NoError(t, loc.ReadJSON(ctx, "results.json", &got))
	assert.Equal(t, want, got)
}

// A restore that restored nothing still has an (empty) item list.
func TestResultsWriterWithNothingWritesAnEmptyList(t *testing.T) {
	ctx := context.Background()
	loc := openTempLocation(t)
	w, err := newResultsWriter(ctx, loc, "results.json")
	require.NoError(t, err)
	require.NoError(t, w.close(nil, nil))
	var got v1alpha1.RestoreResults
	require.NoError(t, loc.ReadJSON(ctx, "results.json", &got))
	assert.NotNil(t, got.Items)
	assert.Empty(t, got.Items)
}

// An aborted results file never appears.
func TestResultsWriterAbortLeavesNothing(t *testing.T) {
	ctx := context.Background()
	loc := openTempLocation(t)
	w, err := newResultsWriter(ctx, loc, "results.json")
	require.NoError(t, err)
	require.NoError(t, w.add(v1alpha1.ItemOutcome{Resource: "configmaps", Name: "a"}))
	w.abort()
	exists, err := loc.Exists(ctx, "results.json")
	require.NoError(t, err)
	assert.False(t, exists)
}
