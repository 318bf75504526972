package backup

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
	"github.com/cairn-backup/cairn/workflows/volume"
)

// fakeActivities stand in for the real ones, registered under their names.
type fakeActivities struct{}

func (fakeActivities) Plan(context.Context, v1alpha1.PlanInput) (*v1alpha1.PlanResult, error) {
	return nil, nil
}

func (fakeActivities) Collect(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
	return nil, nil
}

func (fakeActivities) Related(context.Context, v1alpha1.CollectRelatedInput) (*v1alpha1.CollectRelatedResult, error) {
	return nil, nil
}

func (fakeActivities) Finalize(context.Context, v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
	return nil, nil
}

func (fakeActivities) Cleanup(context.Context, v1alpha1.CleanupInput) error { return nil }

func (fakeActivities) PlanHooks(context.Context, v1alpha1.PlanHooksInput) (*v1alpha1.PlanHooksResult, error) {
	return &v1alpha1.PlanHooksResult{}, nil
}

func (fakeActivities) RunHooks(context.Context, v1alpha1.RunHooksInput) (*v1alpha1.RunHooksResult, error) {
	return nil, nil
}

func newBackupEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	f := fakeActivities{}
	flowtest.Fake(env, clusterActs.PlanBackup, f.Plan)
	flowtest.Fake(env, clusterActs.CollectResources, f.Collect)
	flowtest.Fake(env, clusterActs.CollectRelated, f.Related)
	flowtest.Fake(env, storeActs.FinalizeBackup, f.Finalize)
	flowtest.Fake(env, storeActs.CleanupBackupWork, f.Cleanup)
	flowtest.Fake(env, hookActs.PlanBackupHooks, f.PlanHooks)
	flowtest.Fake(env, hookActs.RunPodHooks, f.RunHooks)
	flowtest.RegisterVolumeFakes(env)
	env.RegisterWorkflowWithOptions(volume.VolumeSnapshotWorkflow, workflow.RegisterOptions{Name: v1alpha1.VolumeSnapshotWorkflowName})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func testRequest() v1alpha1.BackupRequest {
	return v1alpha1.BackupRequest{Spec: v1alpha1.BackupSpec{Name: "shop-1", IncludedNamespaces: []string{"shop"}, StorageLocation: "mem://"}.WithDefaults("")}
}

func threeTypes() *v1alpha1.PlanResult {
	return &v1alpha1.PlanResult{KubernetesVersion: "v1.35.4", Namespaces: 1, Types: []v1alpha1.ResourceType{
		{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
		{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true},
	}, CollectRelated: true}
}

// collected answers a collect activity with items in each of its types.
func collected(items int) func(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
	return collectedBy(func(v1alpha1.ResourceType) v1alpha1.TypeCollected {
		return v1alpha1.TypeCollected{Items: items, Parts: 1}
	})
}

// collectedBy answers a collect activity with what outcome says of each
// of its types.
func collectedBy(outcome func(v1alpha1.ResourceType) v1alpha1.TypeCollected) func(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
	return func(_ context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
		res := &v1alpha1.CollectResult{}
		for _, t := range in.Types {
			tc := outcome(t)
			tc.Resource = t.GroupResource()
			res.Types = append(res.Types, tc)
		}
		return res, nil
	}
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) v1alpha1.BackupStatus {
	t.Helper()
	v, err := env.QueryWorkflow(v1alpha1.QueryStatus)
	require.NoError(t, err)
	var s v1alpha1.BackupStatus
	require.NoError(t, v.Get(&s))
	return s
}

func TestBackupCompletes(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(10)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.MatchedBy(func(in v1alpha1.CollectRelatedInput) bool {
		// Only custom resources with items ask for their CRD.
		return assert.Equal(t, []string{"widgets.example.com"}, in.CustomResources)
	})).Return(&v1alpha1.CollectRelatedResult{Resources: map[string]int{"customresourcedefinitions.apiextensions.k8s.io": 1}}, nil).Once()
	committed := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeInput) bool {
		return in.Status.Phase == v1alpha1.PhaseCompleted && in.Status.ItemsDone == 31
	})).Return(&v1alpha1.FinalizeResult{Items: 31, TarballBytes: 4096, CompletionTime: &committed}, nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.BackupStatus
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.PhaseCompleted, res.Phase)
	assert.Equal(t, 31, res.ItemsDone)
	assert.Equal(t, 3, res.ResourceTypesDone)
	assert.Equal(t, int64(4096), res.TarballBytes)
	assert.Equal(t, "v1.35.4", res.KubernetesVersion)
	assert.NotNil(t, res.Expiration)
	require.NotNil(t, res.CompletionTime)
	assert.Equal(t, committed, *res.CompletionTime, "the backup ends when finalize commits it")

	s := queryStatus(t, env)
	assert.Equal(t, v1alpha1.PhaseCompleted, s.Phase)
	assert.Equal(t, 10, s.Resources["deployments.apps"].Items)
	assert.True(t, s.Resources["deployments.apps"].Done)
}

// TestBackupIsCompletedOnlyOnceCleanedUp: finalize removes the
// intermediate state once it has committed, so no cleanup step follows a
// committed backup; while finalize runs, the status says Finalizing, so
// a client waiting for the backup's end does not see Completed before
// the run is over.
func TestBackupIsCompletedOnlyOnceCleanedUp(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(1)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	// Nothing else takes time on the workflow clock: at 30 s finalize
	// is running.
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).After(time.Minute).Once()
	started := startedActivities(env)
	var during v1alpha1.Phase
	env.RegisterDelayedCallback(func() { during = queryStatus(t, env).Phase }, 30*time.Second)

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, v1alpha1.PhaseFinalizing, during, "the phase while finalize commits and removes the intermediate state")
	assert.Equal(t, v1alpha1.PhaseCompleted, queryStatus(t, env).Phase)
	assert.NotContains(t, *started, workflows.ActivityName(storeActs.CleanupBackupWork))
}

func TestBackupWithTypeErrorIsPartiallyFailed(t *testing.T) {
	env := newBackupEnv(t)
	plan := threeTypes()
	plan.CollectRelated = false
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(plan, nil)
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collectedBy(func(t v1alpha1.ResourceType) v1alpha1.TypeCollected {
		if t.Resource == "widgets" {
			return v1alpha1.TypeCollected{Error: "widgets.example.com is forbidden"}
		}
		return v1alpha1.TypeCollected{Items: 2}
	}))
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.MatchedBy(func(in v1alpha1.FinalizeInput) bool {
		return in.Status.Phase == v1alpha1.PhasePartiallyFailed
	})).Return(&v1alpha1.FinalizeResult{Items: 4}, nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	s := queryStatus(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, s.Phase)
	assert.Equal(t, 1, s.Errors)
	assert.Equal(t, "widgets.example.com is forbidden", s.Resources["widgets.example.com"].Error)
}

func TestBackupFailsWithReadableReasonAndDiscards(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("the Kubernetes API server has been unreachable for 10m0s", v1alpha1.ErrTypeClusterUnreachable, nil)).Once()
	env.OnActivity(storeActs.CleanupBackupWork, mock.Anything, discardAs(v1alpha1.PhaseFailed)).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.Error(t, env.GetWorkflowError())
	s := queryStatus(t, env)
	assert.Equal(t, v1alpha1.PhaseFailed, s.Phase)
	assert.Contains(t, s.FailureReason, "ClusterUnreachable")
	assert.Contains(t, s.FailureReason, "unreachable for 10m0s")
}

func TestBackupCanceledDuringCollectionCleansUp(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil)
	// A collection runs until the cancel reaches it; the test env reports
	// the activity canceled at once, and the test's end releases the rest.
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(func(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-testDone:
			return nil, errors.New("the test ended")
		}
	})
	env.OnActivity(storeActs.CleanupBackupWork, mock.Anything, discardAs(v1alpha1.PhaseCanceled)).Return(nil).Once()
	// Collections heartbeat in real time, so the workflow clock does too.
	env.SetTestTimeout(30 * time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 200*time.Millisecond)

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	err := env.GetWorkflowError()
	require.Error(t, err)
	var canceled *temporal.CanceledError
	assert.True(t, errors.As(err, &canceled), "want a canceled error, got %v", err)
	assert.Equal(t, v1alpha1.PhaseCanceled, queryStatus(t, env).Phase)
}

func TestBackupBoundsConcurrentCollections(t *testing.T) {
	env := newBackupEnv(t)
	plan := &v1alpha1.PlanResult{}
	for _, r := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		plan.Types = append(plan.Types, v1alpha1.ResourceType{Version: "v1", Resource: r, Kind: r, Namespaced: true})
	}
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(plan, nil)
	var running, peak atomic.Int32
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(func(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return collected(1)(ctx, in)
	})
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{Items: 8}, nil)

	req := testRequest()
	req.Options.Concurrency = 2
	env.ExecuteWorkflow(BackupWorkflow, req)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 8, queryStatus(t, env).ItemsDone)
	assert.LessOrEqual(t, peak.Load(), int32(2), "never more collections at once than the bound")
}

// discardAs matches the cleanup of a backup that ended in phase without
// committing: everything but the log goes, and the phase is recorded.
func discardAs(phase v1alpha1.Phase) any {
	return mock.MatchedBy(func(in v1alpha1.CleanupInput) bool {
		return in.Backup == "shop-1" && in.Location == "mem://" && in.Discard && in.Phase == phase && in.StartTime != nil
	})
}
