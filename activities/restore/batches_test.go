package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tarball"
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

// The second pass prepares items on several goroutines; the batches hold
// them in the tarball's order all the same, and a retry writes the same
// bytes.
func TestPlanBatchesFollowTheTarballsOrder(t *testing.T) {
	ctx := context.Background()
	src := tarballSource{loc: openTempLocation(t), key: "b/b.tar.gz"}
	// Not in any sorted order: the tarball's own order is the one kept.
	var want []string
	var buf bytes.Buffer
	tw, err := tarball.NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(3000) {
		name := fmt.Sprintf("cm-%04d", i)
		want = append(want, name)
		obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"app","uid":"u-%d","resourceVersion":"7"},"data":{"k":"%d"}}`, name, i, i)
		require.NoError(t, tw.Add("configmaps", "v1", "app", name, []byte(obj)))
	}
	require.NoError(t, tw.Close())
	require.NoError(t, src.loc.WriteAll(ctx, src.key, buf.Bytes()))

	spec := v1alpha1.RestoreSpec{Name: "r1", BackupName: "b"}.WithDefaults("")
	sel, err := newSelection(spec)
	require.NoError(t, err)
	p := &restorePlan{crds: map[string]bool{}, types: map[string]v1alpha1.RestoreType{
		"configmaps": {ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}},
		"namespaces": {ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "namespaces", Kind: "Namespace"}},
	}, bareNamespaces: true}
	run := &runlog.Run{Log: zap.NewNop(), Loc: src.loc, Restore: location.Restore("r1")}
	// Both passes heartbeat: they run as an activity.
	passes := func(ctx context.Context) (int, error) {
		idx, err := scanBackup(ctx, src, sel)
		if err != nil {
			return 0, err
		}
		w := newBatchWriter(run, 100)
		if err := writeItems(ctx, src, idx, p, sel, w); err != nil {
			return 0, err
		}
		return w.batches["configmaps"], w.finish(ctx)
	}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(passes)
	plan := func() (names []string, stored [][]byte) {
		batches, err := activitytest.Run[int](t, env, passes)
		require.NoError(t, err)
		require.Equal(t, 30, *batches)
		for b := range *batches {
			data, err := run.Loc.ReadAll(ctx, run.Restore.Batch("configmaps", b))
			require.NoError(t, err)
			stored = append(stored, data)
			for line := range bytes.Lines(data) {
				var it Item
				require.NoError(t, json.Unmarshal(line, &it))
				names = append(names, it.Object["metadata"].(map[string]any)["name"].(string))
				assert.NotContains(t, it.Object["metadata"], "resourceVersion", "the item is prepared")
			}
		}
		return names, stored
	}
	names, first := plan()
	assert.Equal(t, want, names)
	_, again := plan()
	assert.Equal(t, first, again, "a retry writes the same batches")
}
