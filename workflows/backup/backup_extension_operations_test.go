package backup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func (fakeActivities) Additional(context.Context, v1alpha1.CollectAdditionalInput) (*v1alpha1.CollectAdditionalResult, error) {
	return &v1alpha1.CollectAdditionalResult{}, nil
}

func (fakeActivities) RunOperations(context.Context, v1alpha1.RunOperationsInput) (*v1alpha1.RunOperationsResult, error) {
	return nil, nil
}

func (fakeActivities) CancelOperations(context.Context, v1alpha1.CancelOperationsInput) error {
	return nil
}

// newExtensionsEnv is a backup's test environment whose plan registers
// extensions, and whose collections answer with collect.
func newExtensionsEnv(t *testing.T, collect func(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error)) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := newBackupEnv(t)
	f := fakeActivities{}
	flowtest.Fake(env, clusterActs.CollectAdditional, f.Additional)
	flowtest.Fake(env, clusterActs.RunOperations, f.RunOperations)
	flowtest.Fake(env, clusterActs.CancelOperations, f.CancelOperations)
	flowtest.Fake(env, storeActs.SummarizeDryRun, f.Summarize)
	flowtest.Fake(env, storeActs.DiscardDryRun, f.Discard)
	plan := threeTypes()
	plan.CollectRelated, plan.Extensions = false, 1
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(plan, nil)
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collect)
	env.OnActivity(clusterActs.CollectAdditional, mock.Anything, mock.Anything).Return(&v1alpha1.CollectAdditionalResult{}, nil)
	return env
}

// startingOperations collects two items per type, each starting an
// operation.
var startingOperations = collectedBy(func(v1alpha1.ResourceType) v1alpha1.TypeCollected {
	return v1alpha1.TypeCollected{Items: 2, Operations: 2}
})

// TestBackupWaitsForExtensionOperations: a backup whose collections
// started operations runs them in WaitingForOperations, with the item
// operation timeout, before it finalizes; those that fail make it
// PartiallyFailed with the first one's message.
func TestBackupWaitsForExtensionOperations(t *testing.T) {
	env := newExtensionsEnv(t, startingOperations)
	var phase v1alpha1.Phase
	env.OnActivity(clusterActs.RunOperations, mock.Anything, mock.MatchedBy(func(in v1alpha1.RunOperationsInput) bool {
		return in.Timeout == v1alpha1.DefaultItemOperationTimeout
	})).Return(func(context.Context, v1alpha1.RunOperationsInput) (*v1alpha1.RunOperationsResult, error) {
		phase = queryStatus(t, env).Phase
		return &v1alpha1.RunOperationsResult{Operations: v1alpha1.OperationCounts{Total: 6, Completed: 5, Failed: 1},
			FirstError: "extension x: operation failed: no disk"}, nil
	}).Once()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeInput) bool {
		return in.Status.Phase == v1alpha1.PhasePartiallyFailed
	})).Return(&v1alpha1.FinalizeResult{Items: 6}, nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, v1alpha1.PhaseWaitingForOperations, phase)
	s := queryStatus(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
	assert.Equal(t, &v1alpha1.OperationCounts{Total: 6, Completed: 5, Failed: 1}, s.ExtensionOperations)
	assert.Equal(t, 1, s.Errors)
	assert.Equal(t, "1 of 6 extension operations did not complete, the first: extension x: operation failed: no disk", s.FailureReason)
}

// TestBackupWhoseOperationsStepFailsCancelsThem: when the step that waits
// for the operations fails for good, the backup fails and asks every
// operation to stop, so none outlives it.
func TestBackupWhoseOperationsStepFailsCancelsThem(t *testing.T) {
	env := newExtensionsEnv(t, startingOperations)
	env.OnActivity(clusterActs.RunOperations, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("the backup location is gone", v1alpha1.ErrTypeLocation, nil))
	env.OnActivity(clusterActs.CancelOperations, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(storeActs.CleanupBackupWork, mock.Anything, discardAs(v1alpha1.PhaseFailed)).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.Error(t, env.GetWorkflowError())
	s := queryStatus(t, env)
	assert.Equal(t, v1alpha1.PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "the backup location is gone")
}

// TestBackupWithoutOperationsRunsNoOperationsStep: extensions registered
// but no operation started costs no step.
func TestBackupWithoutOperationsRunsNoOperationsStep(t *testing.T) {
	env := newExtensionsEnv(t, collected(2))
	env.OnActivity(clusterActs.RunOperations, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("no operations step expected", "Unexpected", nil)).Maybe()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{Items: 6}, nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, v1alpha1.PhaseCompleted, queryStatus(t, env).Phase)
}

func (fakeActivities) Summarize(context.Context, v1alpha1.SummarizeDryRunInput) (*v1alpha1.DryRunSummary, error) {
	return &v1alpha1.DryRunSummary{}, nil
}

func (fakeActivities) Discard(context.Context, v1alpha1.SummarizeDryRunInput) error { return nil }

// TestDryRunReportsOperationsWithoutRunningThem: a dry run tells the
// extensions it is one, counts the operations they would start, and runs
// none of them; with no tarball to make, its collections are given no
// start time to stamp segments with.
func TestDryRunReportsOperationsWithoutRunningThem(t *testing.T) {
	var dry []bool
	env := newExtensionsEnv(t, func(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
		dry = append(dry, in.DryRun && in.StartTime == nil)
		return startingOperations(ctx, in)
	})
	env.OnActivity(clusterActs.RunOperations, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("a dry run runs no operation", "Unexpected", nil)).Maybe()

	env.ExecuteWorkflow(BackupDryRunWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.BackupDryRun
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 6, res.ExtensionOperations)
	require.NotEmpty(t, dry)
	for _, d := range dry {
		assert.True(t, d, "the collections know they are a dry run's, and make no tarball segments")
	}
}
