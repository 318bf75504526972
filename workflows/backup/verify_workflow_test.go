package backup

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func runVerify(t *testing.T, verify func(context.Context, v1alpha1.VerifyBackupRequest) (*v1alpha1.VerifyBackupResult, error)) (*v1alpha1.VerifyBackupResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.Fake(env, storeActs.VerifyBackupData, verify)
	flowtest.Fake(env, repositoryActs.VerifyBackupVolumes, func(context.Context, v1alpha1.VerifyBackupRequest) (*v1alpha1.VolumeDataVerified, error) {
		return &v1alpha1.VolumeDataVerified{Snapshots: 1, Errors: []string{"blob p123 missing"}}, nil
	})
	env.ExecuteWorkflow(VerifyBackupWorkflow, v1alpha1.VerifyBackupRequest{Backup: "b1", Location: "mem://"})
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res v1alpha1.VerifyBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return &res, nil
}

// What differs is the workflow's result, not its failure; a backup that
// cannot be read at all fails it.
func TestVerifyBackupWorkflowReturnsTheVerdict(t *testing.T) {
	res, err := runVerify(t, func(_ context.Context, in v1alpha1.VerifyBackupRequest) (*v1alpha1.VerifyBackupResult, error) {
		return &v1alpha1.VerifyBackupResult{Backup: in.Backup, Manifest: true, Objects: 3, Differ: []string{"resources.tar.gz: SHA-256 differs"}}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"resources.tar.gz: SHA-256 differs"}, res.Differ)
	require.NotNil(t, res.VolumeData, "the volume data is checked too")
	assert.Equal(t, []string{"blob p123 missing"}, res.VolumeData.Errors)

	_, err = runVerify(t, func(context.Context, v1alpha1.VerifyBackupRequest) (*v1alpha1.VerifyBackupResult, error) {
		return nil, errors.New("bucket gone")
	})
	assert.ErrorContains(t, err, "verify backup b1")
}
