package workflows_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	cairnworker "github.com/cairn-backup/cairn/worker"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// TestReplayRecordedHistories replays histories recorded from real runs
// (see tests/e2e/record_test.go) against today's workflow code: a change
// that would break running backups after an upgrade fails here, and must
// go behind workflow.GetVersion.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata/")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			cairnworker.RegisterWorkflows(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// TestEveryWorkflowTypeHasARecordedHistory: a workflow type without a
// recorded history is not guarded by the replay test. `make
// record-histories` records one from the end-to-end test that runs it
// (recordHistory in tests/e2e).
func TestEveryWorkflowTypeHasARecordedHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	var recorded []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var h struct {
			Events []struct {
				Started *struct {
					WorkflowType struct{ Name string } `json:"workflowType"`
				} `json:"workflowExecutionStartedEventAttributes"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal(data, &h), f)
		require.NotEmpty(t, h.Events, f)
		require.NotNil(t, h.Events[0].Started, "%s does not start with WorkflowExecutionStarted", f)
		recorded = append(recorded, h.Events[0].Started.WorkflowType.Name)
	}
	for _, name := range cairnworker.WorkflowNames() {
		assert.True(t, slices.Contains(recorded, name), "no history of workflow type %s in testdata/", name)
	}
}

// TestEventBoundCoversRecordedHistories: the event bound that the
// history tests state (flowtest.HistoryEvents) is at least the number of
// events each real history holds, and not so loose that it says
// nothing: replaying a history makes the same commands its run made.
func TestEventBoundCoversRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var h struct {
				Events []json.RawMessage `json:"events"`
			}
			require.NoError(t, json.Unmarshal(data, &h))
			counted := flowtest.NewHistoryEvents()
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
				Interceptors: []interceptor.WorkerInterceptor{counted},
			})
			require.NoError(t, err)
			cairnworker.RegisterWorkflows(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
			runs := counted.Runs()
			require.Len(t, runs, 1)
			for _, c := range runs {
				t.Logf("%d events recorded, %s", len(h.Events), c)
				assert.GreaterOrEqual(t, c.Events(), len(h.Events), "the bound is below a real history")
				assert.LessOrEqual(t, c.Events(), 3*len(h.Events), "the bound is over three times a real history")
			}
		})
	}
}
