package restore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

func storedSkips(t *testing.T, run *runlog.Run) []string {
	t.Helper()
	var names []string
	require.NoError(t, run.Loc.ReadLines(context.Background(), run.Restore.PlanSkips(), func(line []byte) error {
		var o v1alpha1.ItemOutcome
		require.NoError(t, json.Unmarshal(line, &o))
		names = append(names, o.Name)
		return nil
	}))
	return names
}

// TestRuleSkipsAreStoredWholeOrNotAtAll: the items a plan leaves out by
// rule are in the location once it finishes; a plan that does not finish
// leaves what an earlier attempt stored, and one that skips nothing
// replaces it with nothing.
func TestRuleSkipsAreStoredWholeOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	loc, err := location.OpenPlain(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	defer loc.Close()
	run := &runlog.Run{Log: zap.NewNop(), Loc: loc, Restore: location.Restore("r1")}
	skip := func(w *batchWriter, name string) {
		require.NoError(t, w.skip(ctx, v1alpha1.ItemOutcome{Resource: "pods", Namespace: "shop", Name: name, Result: v1alpha1.ItemSkipped}))
	}

	w := newBatchWriter(run, 200)
	skip(w, "web-1")
	skip(w, "web-2")
	require.NoError(t, w.finish(ctx))
	assert.Equal(t, []string{"web-1", "web-2"}, storedSkips(t, run))
	assert.Equal(t, 2, w.ruleSkips)

	cut := newBatchWriter(run, 200)
	skip(cut, "web-3")
	cut.abort()
	assert.Equal(t, []string{"web-1", "web-2"}, storedSkips(t, run), "an attempt cut short stores nothing")

	none := newBatchWriter(run, 200)
	require.NoError(t, none.finish(ctx))
	assert.Empty(t, storedSkips(t, run))
}
