package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

type fakeRestoreActivities struct{}

func (fakeRestoreActivities) Plan(context.Context, RestorePlanInput) (*RestorePlanResult, error) {
	return nil, nil
}
func (fakeRestoreActivities) Apply(context.Context, ApplyInput) (*ApplyResult, error) {
	return nil, nil
}
func (fakeRestoreActivities) Step(context.Context, RestoreStepInput) (*StepResult, error) {
	return nil, nil
}
func (fakeRestoreActivities) Finalize(context.Context, FinalizeRestoreInput) (*FinalizeRestoreResult, error) {
	return nil, nil
}
func (fakeRestoreActivities) Cleanup(context.Context, RestoreStepInput) error { return nil }

func newRestoreEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	f := fakeRestoreActivities{}
	env.RegisterActivityWithOptions(f.Plan, activity.RegisterOptions{Name: PlanRestoreActivity})
	env.RegisterActivityWithOptions(f.Apply, activity.RegisterOptions{Name: ApplyActivity})
	env.RegisterActivityWithOptions(f.Step, activity.RegisterOptions{Name: WaitCRDsActivity})
	env.RegisterActivityWithOptions(f.Step, activity.RegisterOptions{Name: RelinkOwnersActivity})
	env.RegisterActivityWithOptions(f.Finalize, activity.RegisterOptions{Name: FinalizeRestoreActivity})
	env.RegisterActivityWithOptions(f.Cleanup, activity.RegisterOptions{Name: CleanupRestoreActivity})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func restoreRequest() RestoreRequest {
	return RestoreRequest{Spec: RestoreSpec{Name: "shop-r", BackupName: "shop-1", StorageLocation: "mem://"}.WithDefaults("")}
}

func crdThenWidgets() *RestorePlanResult {
	return &RestorePlanResult{BackupFormat: BackupFormatCairn, ItemsTotal: 3, Types: []RestoreType{
		{ResourceType: ResourceType{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Items: 1, Batches: 1},
		{ResourceType: ResourceType{Version: "v1", Resource: "configmaps", Namespaced: true}, Items: 1, Batches: 1},
		{ResourceType: ResourceType{Group: "example.com", Version: "v1", Resource: "widgets", Namespaced: true}, Items: 1, Batches: 1},
	}}
}

func restoreStatusOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) RestoreStatus {
	t.Helper()
	v, err := env.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	var s RestoreStatus
	require.NoError(t, v.Get(&s))
	return s
}

// TestRestoreAppliesInPlanOrder checks types are applied one after the
// other in plan order, CRDs waited for before custom resources, owner
// references relinked at the end, and the results recorded.
func TestRestoreAppliesInPlanOrder(t *testing.T) {
	env := newRestoreEnv(t)
	var order []string
	env.OnActivity(PlanRestoreActivity, mock.Anything, mock.Anything).Return(crdThenWidgets(), nil).Once()
	env.OnActivity(ApplyActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in ApplyInput) (*ApplyResult, error) {
		order = append(order, in.Type.GroupResource())
		deferred := 0
		if in.Type.Resource == "configmaps" {
			deferred = 1 // owned by a widget, restored after it
		}
		return &ApplyResult{Outcome: TypeOutcome{Restored: 1}, Deferred: deferred}, nil
	}).Times(3)
	env.OnActivity(WaitCRDsActivity, mock.Anything, mock.Anything).Return(func(context.Context, RestoreStepInput) (*StepResult, error) {
		order = append(order, "wait-crds")
		return &StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(RelinkOwnersActivity, mock.Anything, mock.Anything).Return(func(context.Context, RestoreStepInput) (*StepResult, error) {
		order = append(order, "relink")
		return &StepResult{Done: 1}, nil
	}).Once()
	env.OnActivity(FinalizeRestoreActivity, mock.Anything, mock.MatchedBy(func(in FinalizeRestoreInput) bool {
		return in.Status.Phase == PhaseCompleted && in.Status.ItemsRestored == 3
	})).Return(&FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(CleanupRestoreActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []string{"customresourcedefinitions.apiextensions.k8s.io", "wait-crds", "configmaps", "widgets.example.com", "relink"}, order)
	s := restoreStatusOf(t, env)
	assert.Equal(t, PhaseCompleted, s.Phase)
	assert.Equal(t, 3, s.ResourceTypesDone)
	assert.Equal(t, 3, s.ItemsRestored)
}

// TestRestoreWithFailedItemsIsPartiallyFailed: item failures do not stop
// the restore; they make it PartiallyFailed.
func TestRestoreWithFailedItemsIsPartiallyFailed(t *testing.T) {
	env := newRestoreEnv(t)
	plan := crdThenWidgets()
	plan.Types = plan.Types[1:2]
	env.OnActivity(PlanRestoreActivity, mock.Anything, mock.Anything).Return(plan, nil).Once()
	env.OnActivity(ApplyActivity, mock.Anything, mock.Anything).Return(&ApplyResult{Outcome: TypeOutcome{Restored: 9, Failed: 1}}, nil).Once()
	env.OnActivity(FinalizeRestoreActivity, mock.Anything, mock.MatchedBy(func(in FinalizeRestoreInput) bool {
		return in.Status.Phase == PhasePartiallyFailed && in.Status.ItemsFailed == 1
	})).Return(&FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(CleanupRestoreActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, PhasePartiallyFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "1 items could not be restored")
}

// TestRestoreOfMissingBackupFailsAndStillRecords: a non-retryable plan
// error fails the restore at once, and its outcome is still recorded.
func TestRestoreOfMissingBackupFailsAndStillRecords(t *testing.T) {
	env := newRestoreEnv(t)
	env.OnActivity(PlanRestoreActivity, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError(`backup "shop-1" is not in mem://`, ErrTypeBackupNotFound, nil)).Once()
	env.OnActivity(FinalizeRestoreActivity, mock.Anything, mock.MatchedBy(func(in FinalizeRestoreInput) bool {
		return in.Status.Phase == PhaseFailed
	})).Return(&FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(CleanupRestoreActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.Error(t, env.GetWorkflowError())
	s := restoreStatusOf(t, env)
	assert.Equal(t, PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, ErrTypeBackupNotFound)
}
