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

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
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
	skip := v1alpha1.ItemOutcome{Resource: "events", Namespace: "shop", Name: "e", Result: v1alpha1.ItemSkipped, Reason: "never restored"}
	ns := v1alpha1.ItemOutcome{Resource: "namespaces", Name: "shop", Result: v1alpha1.ItemRestored, Action: v1alpha1.ActionCreated}
	cm1 := v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "a", Result: v1alpha1.ItemRestored, Action: v1alpha1.ActionCreated}
	cm2 := v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "b", Result: v1alpha1.ItemSkipped, Reason: ReasonExistsDiffers}
	cm3 := v1alpha1.ItemOutcome{Resource: "configmaps", Namespace: "shop", Name: "c", Result: v1alpha1.ItemFailed, Reason: "forbidden"}
	writeLines(t, loc, keys.PlanSkips(), skip)
	writeLines(t, loc, keys.BatchResultsOf("namespaces")+"00000.jsonl", ns)
	writeLines(t, loc, keys.BatchResultsOf("configmaps")+"00000.jsonl", cm1, cm2)
	writeLines(t, loc, keys.BatchResultsOf("configmaps")+"00001.jsonl", cm3)
	writeLines(t, loc, keys.Warnings("apply-configmaps"), "a stored warning")

	a := &Activities{Log: zap.NewNop()}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a.FinalizeRestore)
	in := v1alpha1.FinalizeRestoreInput{
		Spec:   v1alpha1.RestoreSpec{Name: "r1", BackupName: "b1", StorageLocation: "file://" + dir},
		Status: v1alpha1.RestoreStatus{Phase: v1alpha1.PhasePartiallyFailed, Order: []string{"namespaces", "configmaps"}},
	}
	res, err := activitytest.Run[v1alpha1.FinalizeRestoreResult](t, env, a.FinalizeRestore, in)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ItemsRestored)
	assert.Equal(t, 2, res.ItemsSkipped)
	assert.Equal(t, 1, res.ItemsFailed)
	assert.Equal(t, 2, res.Warnings)
	assert.Equal(t, v1alpha1.TypeOutcome{Restored: 1, Skipped: 1, Failed: 1}, res.Resources["configmaps"])

	var results v1alpha1.RestoreResults
	require.NoError(t, loc.ReadJSON(context.Background(), keys.Results(), &results))
	assert.Equal(t, []v1alpha1.ItemOutcome{skip, ns, cm1, cm2, cm3}, results.Items)
	assert.Equal(t, []string{"a stored warning", "configmaps shop/b: " + ReasonExistsDiffers}, results.Warnings)
	var meta v1alpha1.RestoreMetadata
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
