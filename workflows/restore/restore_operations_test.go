package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func (fakeRestoreActivities) RunOperations(context.Context, v1alpha1.RunRestoreOperationsInput) (*v1alpha1.RunRestoreOperationsResult, error) {
	return nil, nil
}

// newOperationsEnv is a restore's test environment whose plan kept an
// extension, and whose configmaps apply with apply's answer.
func newOperationsEnv(t *testing.T, apply func(context.Context, v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error)) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := newRestoreEnv(t)
	f := fakeRestoreActivities{}
	flowtest.Fake(env, restoreActs.RunRestoreOperations, f.RunOperations)
	flowtest.Fake(env, restoreActs.CancelRestoreOperations, f.Cleanup)
	plan := crdThenWidgets()
	plan.Types, plan.Extensions = plan.Types[1:2], 1
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(plan, nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(apply).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()
	return env
}

func restoredOne(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
	return applied(in, func(v1alpha1.RestoreType) v1alpha1.TypeApplied {
		return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 1}}
	}), nil
}

// TestRestoreWaitsForExtensionOperations: once every item is applied, a
// restore whose plan kept extensions runs their operations in
// WaitingForOperations with its item operation timeout; one that failed
// makes it PartiallyFailed with the first one's message.
func TestRestoreWaitsForExtensionOperations(t *testing.T) {
	env := newOperationsEnv(t, restoredOne)
	var phase v1alpha1.Phase
	env.OnActivity(restoreActs.RunRestoreOperations, mock.Anything, mock.MatchedBy(func(in v1alpha1.RunRestoreOperationsInput) bool {
		return in.Restore == "shop-r" && in.Backup == "shop-1" && in.Timeout == time.Hour
	})).Return(func(context.Context, v1alpha1.RunRestoreOperationsInput) (*v1alpha1.RunRestoreOperationsResult, error) {
		phase = restoreStatusOf(t, env).Phase
		return &v1alpha1.RunRestoreOperationsResult{Operations: v1alpha1.OperationCounts{Total: 3, Completed: 2, Failed: 1},
			FirstError: "extension x: operation failed: no disk"}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeRestoreInput) bool {
		return in.Status.Phase == v1alpha1.PhasePartiallyFailed
	})).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()

	req := restoreRequest()
	req.Spec.ItemOperationTimeout = &metav1.Duration{Duration: time.Hour}
	env.ExecuteWorkflow(RestoreWorkflow, req)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, v1alpha1.PhaseWaitingForOperations, phase)
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
	assert.Equal(t, &v1alpha1.OperationCounts{Total: 3, Completed: 2, Failed: 1}, s.ExtensionOperations)
	assert.Equal(t, "1 of 3 extension operations did not complete, the first: extension x: operation failed: no disk", s.FailureReason)
}

// TestFailedRestoreCancelsItsOperations: a restore that fails after its
// items were applied asks every operation to stop, so none outlives it.
func TestFailedRestoreCancelsItsOperations(t *testing.T) {
	env := newOperationsEnv(t, restoredOne)
	env.OnActivity(restoreActs.RunRestoreOperations, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("the location is gone", v1alpha1.ErrTypeLocation, nil))
	env.OnActivity(restoreActs.CancelRestoreOperations, mock.Anything, mock.MatchedBy(func(in v1alpha1.RestoreStepInput) bool {
		return in.Restore == "shop-r"
	})).Return(nil).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.Error(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "the location is gone")
}

// TestRestoreWithoutOperationsCompletes: an operations step that finds
// none leaves the restore Completed, with no counts in its status.
func TestRestoreWithoutOperationsCompletes(t *testing.T) {
	env := newOperationsEnv(t, restoredOne)
	env.OnActivity(restoreActs.RunRestoreOperations, mock.Anything, mock.Anything).Return(&v1alpha1.RunRestoreOperationsResult{}, nil).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhaseCompleted, s.Phase)
	assert.Nil(t, s.ExtensionOperations)
}
