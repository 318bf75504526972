package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

func writeLines(t *testing.T, loc *location.Location, key string, values ...any) {
	t.Helper()
	var b strings.Builder
	for _, v := range values {
		line, err := json.Marshal(v)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	require.NoError(t, loc.WriteAll(context.Background(), key, []byte(b.String())))
}

// TestFinalizeRestoreRecordsEveryOutcomeInApplyOrder: the plan's skips,
// then each type's batches in the planned order, land in results.json;
// the counts come from them, and a conflict skip is also a warning.
func TestFinalizeRestoreRecordsEveryOutcomeInApplyOrder(t *testing.T) {
	dir := t.TempDir()
	loc, err := location.OpenPlain(context.Background(), "file://"+dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	keys := location.Restore("r1")
	skip := workflows.ItemOutcome{Resource: "events", Namespace: "shop", Name: "e", Result: workflows.ItemSkipped, Reason: "never restored"}
	ns := workflows.ItemOutcome{Resource: "namespaces", Name: "shop", Result: workflows.ItemRestored, Action: workflows.ActionCreated}
	cm1 := workflows.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "a", Result: workflows.ItemRestored, Action: workflows.ActionCreated}
	cm2 := workflows.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "b", Result: workflows.ItemSkipped, Reason: ReasonExistsDiffers}
	cm3 := workflows.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "c", Result: workflows.ItemFailed, Reason: "forbidden"}
	writeLines(t, loc, keys.PlanSkips(), skip)
	writeLines(t, loc, keys.BatchResultsOf("namespaces")+"00000.jsonl", ns)
	writeLines(t, loc, keys.BatchResultsOf("configmaps")+"00000.jsonl", cm1, cm2)
	writeLines(t, loc, keys.BatchResultsOf("configmaps")+"00001.jsonl", cm3)
	writeLines(t, loc, keys.Warnings("apply-configmaps"), "a stored warning")

	a := &Activities{Log: zap.NewNop()}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a.FinalizeRestore)
	in := workflows.FinalizeRestoreInput{
		Spec:   workflows.RestoreSpec{Name: "r1", BackupName: "b1", StorageLocation: "file://" + dir},
		Status: workflows.RestoreStatus{Phase: workflows.PhasePartiallyFailed, Order: []string{"namespaces", "configmaps"}},
	}
	res, err := activitytest.Run[workflows.FinalizeRestoreResult](t, env, a.FinalizeRestore, in)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ItemsRestored)
	assert.Equal(t, 2, res.ItemsSkipped)
	assert.Equal(t, 1, res.ItemsFailed)
	assert.Equal(t, 2, res.Warnings)
	assert.Equal(t, workflows.TypeOutcome{Restored: 1, Skipped: 1, Failed: 1}, res.Resources["configmaps"])

	var results workflows.RestoreResults
	require.NoError(t, loc.ReadJSON(context.Background(), keys.Results(), &results))
	assert.Equal(t, []workflows.ItemOutcome{skip, ns, cm1, cm2, cm3}, results.Items)
	assert.Equal(t, []string{"a stored warning", "configmaps shop/b: " + ReasonExistsDiffers}, results.Warnings)
	var meta workflows.RestoreMetadata
	require.NoError(t, loc.ReadJSON(context.Background(), keys.Metadata(), &meta))
	assert.Equal(t, 2, meta.Status.ItemsRestored)
}

// TestWarningsListTheFirstAndCountAll: a restore with a warning per item
// lists the first maxListedWarnings and counts the rest in a last line.
func TestWarningsListTheFirstAndCountAll(t *testing.T) {
	var l warningList
	for i := range maxListedWarnings + 5 {
		l.add(fmt.Sprint("w", i))
	}
	listed := l.listed()
	assert.Equal(t, maxListedWarnings+5, l.total)
	require.Len(t, listed, maxListedWarnings+1)
	assert.Equal(t, "w0", listed[0])
	assert.Equal(t, "5 more warnings are not listed; each item's outcome is in the items above", listed[maxListedWarnings])

	var few warningList
	few.add("only")
	assert.Equal(t, []string{"only"}, few.listed())
}
