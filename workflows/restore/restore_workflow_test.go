package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

type fakeRestoreActivities struct{}

func (fakeRestoreActivities) Plan(context.Context, workflows.RestorePlanInput) (*workflows.RestorePlanResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Apply(context.Context, workflows.ApplyInput) (*workflows.ApplyResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Step(context.Context, workflows.RestoreStepInput) (*workflows.StepResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Finalize(context.Context, workflows.FinalizeRestoreInput) (*workflows.FinalizeRestoreResult, error) {
	return nil, nil
}

func (fakeRestoreActivities) Cleanup(context.Context, workflows.RestoreStepInput) error { return nil }

func (fakeRestoreActivities) Hooks(context.Context, workflows.RestoreHooksInput) (*workflows.RestoreHooksResult, error) {
	return &workflows.RestoreHooksResult{}, nil
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

func restoreRequest() workflows.RestoreRequest {
	return workflows.RestoreRequest{Spec: workflows.RestoreSpec{Name: "shop-r", BackupName: "shop-1", StorageLocation: "mem://"}.WithDefaults("")}
}

func crdThenWidgets() *workflows.RestorePlanResult {
	return &workflows.RestorePlanResult{BackupFormat: workflows.BackupFormatCairn, ItemsTotal: 3, Types: []workflows.RestoreType{
		{ResourceType: workflows.ResourceType{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Items: 1, Batches: 1},
		{ResourceType: workflows.ResourceType{Version: "v1", Resource: "configmaps", Namespaced: true}, Items: 1, Batches: 1},
		{ResourceType: workflows.ResourceType{Group: "example.com", Version: "v1", Resource: "widgets", Namespaced: true}, Items: 1, Batches: 1},
	}}
}

// applied answers an apply activity with outcome's answer for each of its
// types, in order.
func applied(in workflows.ApplyInput, outcome func(workflows.RestoreType) workflows.TypeApplied) *workflows.ApplyResult {
	res := &workflows.ApplyResult{}
	for _, t := range in.Types {
		a := outcome(t)
		a.Resource = t.GroupResource()
		res.Types = append(res.Types, a)
	}
	return res
}

func restoreStatusOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) workflows.RestoreStatus {
	t.Helper()
	v, err := env.QueryWorkflow(workflows.QueryStatus)
	require.NoError(t, err)
	var s workflows.RestoreStatus
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
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in workflows.ApplyInput) (*workflows.ApplyResult, error) {
		return applied(in, func(t workflows.RestoreType) workflows.TypeApplied {
			order = append(order, t.GroupResource())
			deferred := 0
			if t.Resource == "configmaps" {
				deferred = 1 // owned by a widget, restored after it
			}
			return workflows.TypeApplied{Outcome: workflows.TypeOutcome{Restored: 1}, Deferred: deferred}
		}), nil
	}).Times(2) // the CRDs alone, then the configmaps and widgets together
	env.OnActivity(restoreActs.WaitCRDsEstablished, mock.Anything, mock.Anything).Return(func(context.Context, workflows.RestoreStepInput) (*workflows.StepResult, error) {
		order = append(order, "wait-crds")
		return &workflows.StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(restoreActs.RelinkOwners, mock.Anything, mock.Anything).Return(func(context.Context, workflows.RestoreStepInput) (*workflows.StepResult, error) {
		order = append(order, "relink")
		return &workflows.StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in workflows.FinalizeRestoreInput) bool {
		return in.Status.Phase == workflows.PhaseCompleted && in.Status.ItemsRestored == 3
	})).Return(&workflows.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []string{"customresourcedefinitions.apiextensions.k8s.io", "wait-crds", "configmaps", "widgets.example.com", "relink"}, order)
	s := restoreStatusOf(t, env)
	assert.Equal(t, workflows.PhaseCompleted, s.Phase)
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
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in workflows.ApplyInput) (*workflows.ApplyResult, error) {
		return applied(in, func(workflows.RestoreType) workflows.TypeApplied {
			return workflows.TypeApplied{Outcome: workflows.TypeOutcome{Restored: 9, Failed: 1}}
		}), nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in workflows.FinalizeRestoreInput) bool {
		return in.Status.Phase == workflows.PhasePartiallyFailed && in.Status.ItemsFailed == 1
	})).Return(&workflows.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, workflows.PhasePartiallyFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "1 items could not be restored")
}

// TestRestoreOfMissingBackupFailsAndStillRecords: a non-retryable plan
// error fails the restore at once, and its outcome is still recorded.
func TestRestoreOfMissingBackupFailsAndStillRecords(t *testing.T) {
	env := newRestoreEnv(t)
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError(`backup "shop-1" is not in mem://`, workflows.ErrTypeBackupNotFound, nil)).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in workflows.FinalizeRestoreInput) bool {
		return in.Status.Phase == workflows.PhaseFailed
	})).Return(&workflows.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.Error(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, workflows.PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, workflows.ErrTypeBackupNotFound)
}

// TestRestoreHooksRunLastAndFailuresMakeItPartiallyFailed: the
// post-restore hooks run after every type is applied; one that failed
// with onError Fail makes the restore PartiallyFailed and is in its
// reason, one with Continue is not.
func TestRestoreHooksRunLastAndFailuresMakeItPartiallyFailed(t *testing.T) {
	env := newRestoreEnv(t)
	var order []string
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(crdThenWidgets(), nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in workflows.ApplyInput) (*workflows.ApplyResult, error) {
		return applied(in, func(t workflows.RestoreType) workflows.TypeApplied {
			order = append(order, t.GroupResource())
			return workflows.TypeApplied{Outcome: workflows.TypeOutcome{Restored: 1}}
		}), nil
	}).Times(2)
	env.OnActivity(restoreActs.WaitCRDsEstablished, mock.Anything, mock.Anything).Return(&workflows.StepResult{}, nil).Once()
	env.OnActivity(hookActs.RunRestoreHooks, mock.Anything, mock.MatchedBy(func(in workflows.RestoreHooksInput) bool {
		return in.Restore == "shop-r" && in.Backup == "shop-1"
	})).Return(func(context.Context, workflows.RestoreHooksInput) (*workflows.RestoreHooksResult, error) {
		order = append(order, "hooks")
		return &workflows.RestoreHooksResult{Results: []workflows.HookResult{
			{Pod: "shop/db", Phase: workflows.HookPostRestore, Source: "spec hook warm", OnError: workflows.HookFail, ExitCode: 2, Error: "exit code 2"},
			{Pod: "shop/web", Phase: workflows.HookPostRestore, Source: "spec hook ping", OnError: workflows.HookContinue, ExitCode: 1, Error: "exit code 1"},
		}}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.MatchedBy(func(in workflows.FinalizeRestoreInput) bool {
		return in.Status.Phase == workflows.PhasePartiallyFailed && len(in.Status.Hooks) == 2
	})).Return(&workflows.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, "hooks", order[len(order)-1])
	s := restoreStatusOf(t, env)
	assert.Equal(t, workflows.PhasePartiallyFailed, s.Phase)
	assert.Equal(t, "1 post-restore hooks failed: pod shop/db (spec hook warm): exit code 2", s.FailureReason)
}
