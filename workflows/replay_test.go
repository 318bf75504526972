package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	cairnworker "github.com/cairn-backup/cairn/worker"
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
