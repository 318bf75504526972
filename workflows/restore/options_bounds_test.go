package restore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// A restore started with options out of bounds, past the starter, fails
// for good before it does anything.
func TestRestoreRefusesOptionsOutOfBounds(t *testing.T) {
	env := newRestoreEnv(t)
	env.ExecuteWorkflow(RestoreWorkflow, workflows.RestoreRequest{Spec: workflows.RestoreSpec{Name: "r", BackupName: "b"},
		Options: workflows.RestoreOptions{BatchSize: -5}})
	require.True(t, env.IsWorkflowCompleted())
	flowtest.RequireInvalidOptions(t, env.GetWorkflowError(), "options.batchSize -5")
}
