package restore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// A restore started with options out of bounds, past the starter, fails
// for good before it does anything.
func TestRestoreRefusesOptionsOutOfBounds(t *testing.T) {
	env := newRestoreEnv(t)
	env.ExecuteWorkflow(RestoreWorkflow, v1alpha1.RestoreRequest{Spec: v1alpha1.RestoreSpec{Name: "r", BackupName: "b"},
		Options: v1alpha1.RestoreOptions{BatchSize: -5}})
	require.True(t, env.IsWorkflowCompleted())
	flowtest.RequireInvalidOptions(t, env.GetWorkflowError(), "options.batchSize -5")
}
