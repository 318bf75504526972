package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func TestOptionsOutOfBoundsNameTheirField(t *testing.T) {
	assert.Empty(t, BackupOptions{}.Problems(), "unset options take defaults")
	assert.Empty(t, RestoreOptions{}.Problems())
	assert.Empty(t, BackupOptions{PageSize: maxPageSize, Concurrency: 1, HeartbeatTimeout: dur(3 * time.Second)}.Problems())

	got := BackupOptions{PageSize: -1, Concurrency: 1000, VolumeConcurrency: -2,
		HeartbeatTimeout: dur(0), ClusterUnreachableTimeout: dur(-time.Second)}.Problems()
	assert.Equal(t, []string{
		"options.pageSize -1 must be between 1 and 10000 (0 or unset: 500)",
		"options.concurrency 1000 must be between 1 and 64 (0 or unset: 4)",
		"options.volumeConcurrency -2 must be between 1 and 64 (0 or unset: 4)",
		"options.clusterUnreachableTimeout -1s must be between 1s and 24h0m0s",
		"options.heartbeatTimeout 0s must be between 1s and 10m0s",
	}, got)

	got = RestoreOptions{BatchSize: maxBatchSize + 1, Concurrency: -1, CRDEstablishTimeout: dur(2 * time.Hour),
		HeartbeatTimeout: dur(-time.Minute)}.Problems()
	assert.Equal(t, []string{
		"options.concurrency -1 must be between 1 and 256 (0 or unset: 16)",
		"options.batchSize 5001 must be between 1 and 5000 (0 or unset: 200)",
		"options.crdEstablishTimeout 2h0m0s must be between 1s and 1h0m0s",
		"options.heartbeatTimeout -1m0s must be between 1s and 10m0s",
	}, got)
}

// A run started with options out of bounds, past the starter, fails for
// good before it does anything.
func TestRunsRefuseOptionsOutOfBounds(t *testing.T) {
	env := newBackupEnv(t)
	env.ExecuteWorkflow(BackupWorkflow, BackupRequest{Spec: BackupSpec{Name: "b"}, Options: BackupOptions{HeartbeatTimeout: dur(0)}})
	require.True(t, env.IsWorkflowCompleted())
	assertInvalidOptions(t, env.GetWorkflowError(), "options.heartbeatTimeout 0s")

	var suite testsuite.WorkflowTestSuite
	renv := suite.NewTestWorkflowEnvironment()
	renv.ExecuteWorkflow(RestoreWorkflow, RestoreRequest{Spec: RestoreSpec{Name: "r", BackupName: "b"}, Options: RestoreOptions{BatchSize: -5}})
	require.True(t, renv.IsWorkflowCompleted())
	assertInvalidOptions(t, renv.GetWorkflowError(), "options.batchSize -5")
}

func assertInvalidOptions(t *testing.T, err error, want string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, ErrTypeInvalidSpec, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, app.Error(), want)
}
