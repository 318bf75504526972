package restore

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

type fakeRestoreActivities struct{}

func (fakeRestoreActivities) Plan(context.Context, v1alpha1.RestorePlanInput) (*v1alpha1.RestorePlanResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Apply(context.Context, v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Step(context.Context, v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Finalize(context.Context, v1alpha1.FinalizeRestoreInput) (*v1alpha1.FinalizeRestoreResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Cleanup(context.Context, v1alpha1.RestoreStepInput) error { return nil }

func (fakeRestoreActivities) Hooks(context.Context, v1alpha1.RestoreHooksInput) (*v1alpha1.RestoreHooksResult, error) {
	return &v1alpha1.RestoreHooksResult{}, nil
}

func newRestoreEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	f := fakeRestoreActivities{}
	flowtest.Fake(env, restoreActs.PlanRestore, f.Plan)
	flowtest.Fake(env, restoreActs.ApplyResources, f.Apply)
	flowtest.Fake(env, restoreActs.WaitCRDsEstablished, f.Step)
	flowtest.Fake(env, restoreActs.RelinkOwners, f.Step)
	flowtest.Fake(env, restoreActs.FinalizeRestore, f.Finalize)
	flowtest.Fake(env, restoreActs.CleanupRestoreWork, f.Cleanup)
	flowtest.Fake(env, hookActs.RunRestoreHooks, f.Hooks)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func restoreRequest() v1alpha1.RestoreRequest {
	return v1alpha1.RestoreRequest{Spec: v1alpha1.RestoreSpec{Name: "shop-r", BackupName: "shop-1", StorageLocation: "mem://"}.WithDefaults("")}
}

func crdThenWidgets() *v1alpha1.RestorePlanResult {
	return &v1alpha1.RestorePlanResult{BackupFormat: v1alpha1.BackupFormatCairn, ItemsTotal: 3, Types: []v1alpha1.RestoreType{
		{ResourceType: v1alpha1.ResourceType{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Items: 1, Batches: 1},
		{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Namespaced: true}, Items: 1, Batches: 1},
		{ResourceType: v1alpha1.ResourceType{Group: "example.com", Version: "v1", Resource: "widgets", Namespaced: true}, Items: 1, Batches: 1},
	}}
}

// applied answers an apply activity with outcome's answer for each of its
// types, in order.
func applied(in v1alpha1.ApplyInput, outcome func(v1alpha1.RestoreType) v1alpha1.TypeApplied) *v1alpha1.ApplyResult {
	res := &v1alpha1.ApplyResult{}
	for _, t := range in.Types {
		a := outcome(t)
		a.Resource = t.GroupResource()
		res.Types = append(res.Types, a)
	}
	return res
}

func restoreStatusOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) v1alpha1.RestoreStatus {
	t.Helper()
	v, err := env.QueryWorkflow(v1alpha1.QueryStatus)
	require.NoError(t, err)
	var s v1alpha1.RestoreStatus
	require.NoError(t, v.Get(&s))
	return s
}

// TestRestoreAppliesInPlanOrder checks types are applied one after the
// other in plan order, CRDs waited for before custom resources, owner
// references relinked at the end, and the results recorded.
func TestRestoreAppliesInPlanOrder(t *testing.T) {
	env := newRestoreEnv(t)
	var order []string
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(crdThenWidgets(), nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		return applied(in, func(t v1alpha1.RestoreType) v1alpha1.TypeApplied {
			order = append(order, t.GroupResource())
			deferred := 0
			if t.Resource == "configmaps" {
				deferred = 1 // owned by a widget, restored after it
			}
			return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 1}, Deferred: deferred}
		}), nil
	}).Times(2) // the CRDs alone, then the configmaps and widgets together
	env.OnActivity(restoreActs.WaitCRDsEstablished, mock.Anything, mock.Anything).Return(func(context.Context, v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
		order = append(order, "wait-crds")
		return &v1alpha1.StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(restoreActs.RelinkOwners, mock.Anything, mock.Anything).Return(func(context.Context, v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
		order = append(order, "relink")
		return &v1alpha1.StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeRestoreInput) bool {
		return in.Status.Phase == v1alpha1.PhaseCompleted && in.Status.ItemsRestored == 3
	})).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []string{"customresourcedefinitions.apiextensions.k8s.io", "wait-crds", "configmaps", "widgets.example.com", "relink"}, order)
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhaseCompleted, s.Phase)
	assert.Equal(t, 3, s.ResourceTypesDone)
	assert.Equal(t, 3, s.ItemsRestored)
}

// TestRestoreWithFailedItemsIsPartiallyFailed: item failures do not stop
// the restore; they make it PartiallyFailed.
func TestRestoreWithFailedItemsIsPartiallyFailed(t *testing.T) {
	env := newRestoreEnv(t)
	plan := crdThenWidgets()
	plan.Types = plan.Types[1:2]
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(plan, nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		return applied(in, func(v1alpha1.RestoreType) v1alpha1.TypeApplied {
			return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 9, Failed: 1}}
		}), nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeRestoreInput) bool {
		return in.Status.Phase == v1alpha1.PhasePartiallyFailed && in.Status.ItemsFailed == 1
	})).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "1 items could not be restored")
}

// TestRestoreOfMissingBackupFailsAndStillRecords: a non-retryable plan
// error fails the restore at once, and its outcome is still recorded.
func TestRestoreOfMissingBackupFailsAndStillRecords(t *testing.T) {
	env := newRestoreEnv(t)
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError(`backup "shop-1" is not in mem://`, v1alpha1.ErrTypeBackupNotFound, nil)).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeRestoreInput) bool {
		return in.Status.Phase == v1alpha1.PhaseFailed
	})).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.Error(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, v1alpha1.ErrTypeBackupNotFound)
}

// TestRestoreHooksRunLastAndFailuresMakeItPartiallyFailed: the
// post-restore hooks run after every type is applied; one that failed
// with onError Fail makes the restore PartiallyFailed and is in its
// reason, one with Continue is not.
func TestRestoreHooksRunLastAndFailuresMakeItPartiallyFailed(t *testing.T) {
	env := newRestoreEnv(t)
	var order []string
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(crdThenWidgets(), nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		return applied(in, func(t v1alpha1.RestoreType) v1alpha1.TypeApplied {
			order = append(order, t.GroupResource())
			return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 1}}
		}), nil
	}).Times(2)
	env.OnActivity(restoreActs.WaitCRDsEstablished, mock.Anything, mock.Anything).Return(&v1alpha1.StepResult{}, nil).Once()
	env.OnActivity(hookActs.RunRestoreHooks, mock.Anything, mock.MatchedBy(func(in v1alpha1.RestoreHooksInput) bool {
		return in.Restore == "shop-r" && in.Backup == "shop-1"
	})).Return(func(context.Context, v1alpha1.RestoreHooksInput) (*v1alpha1.RestoreHooksResult, error) {
		order = append(order, "hooks")
		return &v1alpha1.RestoreHooksResult{Results: []v1alpha1.HookResult{
			{Pod: "shop/db", Phase: v1alpha1.HookPostRestore, Source: "spec hook warm", OnError: v1alpha1.HookFail, ExitCode: 2, Error: "exit code 2"},
			{Pod: "shop/web", Phase: v1alpha1.HookPostRestore, Source: "spec hook ping", OnError: v1alpha1.HookContinue, ExitCode: 1, Error: "exit code 1"},
		}}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeRestoreInput) bool {
		return in.Status.Phase == v1alpha1.PhasePartiallyFailed && len(in.Status.Hooks) == 2
	})).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, "hooks", order[len(order)-1])
	s := restoreStatusOf(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
	assert.Equal(t, "1 post-restore hooks failed: pod shop/db (spec hook warm): exit code 2", s.FailureReason)
}
