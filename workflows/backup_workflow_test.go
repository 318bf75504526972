package workflows

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// fakeActivities stand in for the real ones, registered under their names.
type fakeActivities struct{}

func (fakeActivities) Plan(context.Context, PlanInput) (*PlanResult, error) { return nil, nil }
func (fakeActivities) Collect(context.Context, CollectInput) (*CollectResult, error) {
	return nil, nil
}
func (fakeActivities) Related(context.Context, CollectRelatedInput) (*CollectRelatedResult, error) {
	return nil, nil
}
func (fakeActivities) Finalize(context.Context, FinalizeInput) (*FinalizeResult, error) {
	return nil, nil
}
func (fakeActivities) Cleanup(context.Context, CleanupInput) error { return nil }

func newBackupEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	f := fakeActivities{}
	env.RegisterActivityWithOptions(f.Plan, activity.RegisterOptions{Name: PlanBackupActivity})
	env.RegisterActivityWithOptions(f.Collect, activity.RegisterOptions{Name: CollectActivity})
	env.RegisterActivityWithOptions(f.Related, activity.RegisterOptions{Name: CollectRelatedActivity})
	env.RegisterActivityWithOptions(f.Finalize, activity.RegisterOptions{Name: FinalizeBackupActivity})
	env.RegisterActivityWithOptions(f.Cleanup, activity.RegisterOptions{Name: CleanupBackupActivity})
	registerVolumeFakes(env)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func testRequest() BackupRequest {
	return BackupRequest{Spec: BackupSpec{Name: "shop-1", IncludedNamespaces: []string{"shop"}, StorageLocation: "mem://"}.WithDefaults("")}
}

func threeTypes() *PlanResult {
	return &PlanResult{KubernetesVersion: "v1.35.4", Namespaces: 1, Types: []ResourceType{
		{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
		{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true},
	}, CollectRelated: true}
}

func collected(items int) func(context.Context, CollectInput) (*CollectResult, error) {
	return func(_ context.Context, in CollectInput) (*CollectResult, error) {
		return &CollectResult{Resource: in.Type.GroupResource(), Items: items, Parts: 1}, nil
	}
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) BackupStatus {
	t.Helper()
	v, err := env.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	var s BackupStatus
	require.NoError(t, v.Get(&s))
	return s
}

func TestBackupCompletes(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(CollectActivity, mock.Anything, mock.Anything).Return(collected(10)).Times(3)
	env.OnActivity(CollectRelatedActivity, mock.Anything, mock.MatchedBy(func(in CollectRelatedInput) bool {
		// Only custom resources with items ask for their CRD.
		return assert.Equal(t, []string{"widgets.example.com"}, in.CustomResources)
	})).Return(&CollectRelatedResult{Resources: map[string]int{"customresourcedefinitions.apiextensions.k8s.io": 1}}, nil).Once()
	committed := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	env.OnActivity(FinalizeBackupActivity, mock.Anything, mock.MatchedBy(func(in FinalizeInput) bool {
		return in.Status.Phase == PhaseCompleted && in.Status.ItemsDone == 31
	})).Return(&FinalizeResult{Items: 31, TarballBytes: 4096, CompletionTime: &committed}, nil).Once()
	env.OnActivity(CleanupBackupActivity, mock.Anything, CleanupInput{Backup: "shop-1", Location: "mem://"}).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res BackupStatus
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, PhaseCompleted, res.Phase)
	assert.Equal(t, 31, res.ItemsDone)
	assert.Equal(t, 3, res.ResourceTypesDone)
	assert.Equal(t, int64(4096), res.TarballBytes)
	assert.Equal(t, "v1.35.4", res.KubernetesVersion)
	assert.NotNil(t, res.Expiration)
	require.NotNil(t, res.CompletionTime)
	assert.Equal(t, committed, *res.CompletionTime, "the backup ends when finalize commits it")

	s := queryStatus(t, env)
	assert.Equal(t, PhaseCompleted, s.Phase)
	assert.Equal(t, 10, s.Resources["deployments.apps"].Items)
	assert.True(t, s.Resources["deployments.apps"].Done)
}

func TestBackupWithTypeErrorIsPartiallyFailed(t *testing.T) {
	env := newBackupEnv(t)
	plan := threeTypes()
	plan.CollectRelated = false
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(plan, nil)
	env.OnActivity(CollectActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in CollectInput) (*CollectResult, error) {
		if in.Type.Resource == "widgets" {
			return &CollectResult{Resource: in.Type.GroupResource(), Error: "widgets.example.com is forbidden"}, nil
		}
		return &CollectResult{Resource: in.Type.GroupResource(), Items: 2}, nil
	})
	env.OnActivity(FinalizeBackupActivity, mock.Anything, mock.MatchedBy(func(in FinalizeInput) bool {
		return in.Status.Phase == PhasePartiallyFailed
	})).Return(&FinalizeResult{Items: 4}, nil).Once()
	env.OnActivity(CleanupBackupActivity, mock.Anything, mock.Anything).Return(nil)

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	s := queryStatus(t, env)
	assert.Equal(t, PhasePartiallyFailed, s.Phase)
	assert.Equal(t, 1, s.Errors)
	assert.Equal(t, "widgets.example.com is forbidden", s.Resources["widgets.example.com"].Error)
}

func TestBackupFailsWithReadableReasonAndDiscards(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("the Kubernetes API server has been unreachable for 10m0s", ErrTypeClusterUnreachable, nil)).Once()
	env.OnActivity(CleanupBackupActivity, mock.Anything, discardAs(PhaseFailed)).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.Error(t, env.GetWorkflowError())
	s := queryStatus(t, env)
	assert.Equal(t, PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "ClusterUnreachable")
	assert.Contains(t, s.FailureReason, "unreachable for 10m0s")
}

func TestBackupCanceledDuringCollectionCleansUp(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(threeTypes(), nil)
	env.OnActivity(CollectActivity, mock.Anything, mock.Anything).Return(func(ctx context.Context, in CollectInput) (*CollectResult, error) {
		for {
			activity.RecordHeartbeat(ctx, nil)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	env.OnActivity(CleanupBackupActivity, mock.Anything, discardAs(PhaseCanceled)).Return(nil).Once()
	// Collections heartbeat in real time, so the workflow clock does too.
	env.SetTestTimeout(30 * time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 200*time.Millisecond)

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	err := env.GetWorkflowError()
	require.Error(t, err)
	var canceled *temporal.CanceledError
	assert.True(t, errors.As(err, &canceled), "want a canceled error, got %v", err)
	assert.Equal(t, PhaseCanceled, queryStatus(t, env).Phase)
}

func TestBackupBoundsConcurrentCollections(t *testing.T) {
	env := newBackupEnv(t)
	plan := &PlanResult{}
	for _, r := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		plan.Types = append(plan.Types, ResourceType{Version: "v1", Resource: r, Kind: r, Namespaced: true})
	}
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(plan, nil)
	var running, peak atomic.Int32
	env.OnActivity(CollectActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in CollectInput) (*CollectResult, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return &CollectResult{Resource: in.Type.GroupResource(), Items: 1}, nil
	})
	env.OnActivity(FinalizeBackupActivity, mock.Anything, mock.Anything).Return(&FinalizeResult{Items: 8}, nil)
	env.OnActivity(CleanupBackupActivity, mock.Anything, mock.Anything).Return(nil)

	req := testRequest()
	req.Options.Concurrency = 2
	env.ExecuteWorkflow(BackupWorkflow, req)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 8, queryStatus(t, env).ItemsDone)
	assert.LessOrEqual(t, peak.Load(), int32(2), "never more collections at once than the bound")
}

// discardAs matches the cleanup of a backup that ended in phase without
// committing: everything but the log goes, and the phase is recorded.
func discardAs(phase Phase) any {
	return mock.MatchedBy(func(in CleanupInput) bool {
		return in.Backup == "shop-1" && in.Location == "mem://" && in.Discard && in.Phase == phase && in.StartTime != nil
	})
}
