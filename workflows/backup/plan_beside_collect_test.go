package backup

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// startedActivities records the type of each activity the run starts.
func startedActivities(env *testsuite.TestWorkflowEnvironment) *[]string {
	var mu sync.Mutex
	started := &[]string{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		*started = append(*started, info.ActivityType.Name)
	})
	return started
}

// TestVolumesAndHooksArePlannedWhileTypesAreCollected: planning the
// volumes does not end before collection has begun, and collection does
// not end before the hooks are planned. Run one after the other, as
// before, the first would wait for the second forever.
func TestVolumesAndHooksArePlannedWhileTypesAreCollected(t *testing.T) {
	env := newBackupEnv(t)
	collecting, hooksPlanned := make(chan struct{}), make(chan struct{})
	var collectStarted sync.Once
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
			<-collecting
			return flowtest.TwoVolumes(), nil
		}).Once()
	env.OnActivity(hookActs.PlanBackupHooks, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.PlanHooksInput) (*v1alpha1.PlanHooksResult, error) {
			close(hooksPlanned)
			return &v1alpha1.PlanHooksResult{}, nil
		}).Once()
	collect := collected(1)
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
			collectStarted.Do(func() { close(collecting) })
			<-hooksPlanned
			return collect(ctx, in)
		}).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	env.OnActivity(csiActs.CreateVolumeSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
			return &v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName(in.Backup, in.Volume)}, nil
		}).Twice()
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Twice()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.Anything).Return(&v1alpha1.CollectSnapshotsResult{}, nil).Once()

	st := runToEnd(t, env)
	assert.Equal(t, v1alpha1.PhaseCompleted, st.Phase, st.FailureReason)
	assert.Equal(t, 3, st.ItemsDone)
	require.Len(t, st.Operations, 2)
	for _, op := range st.Operations {
		assert.Equal(t, v1alpha1.OperationCompleted, op.Phase, op.ID)
	}
}

// canceledActivities closes the channel of an activity type when the
// run cancels the first activity of that type. The test environment does
// not cancel a running fake's context: the fakes wait on these instead.
func canceledActivities(env *testsuite.TestWorkflowEnvironment, types ...any) map[string]chan struct{} {
	chans, once := map[string]chan struct{}{}, map[string]*sync.Once{}
	for _, a := range types {
		chans[workflows.ActivityName(a)], once[workflows.ActivityName(a)] = make(chan struct{}), &sync.Once{}
	}
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if c, ok := chans[info.ActivityType.Name]; ok {
			once[info.ActivityType.Name].Do(func() { close(c) })
		}
	})
	return chans
}

// TestAFailedVolumePlanStopsCollection: a volume plan that fails for
// good cancels the collection running beside it, and is why the backup
// failed; nothing after collection starts.
func TestAFailedVolumePlanStopsCollection(t *testing.T) {
	env := newBackupEnv(t)
	collecting := make(chan struct{})
	var collectStarted sync.Once
	canceled := canceledActivities(env, clusterActs.CollectResources)
	collectCanceled := canceled[workflows.ActivityName(clusterActs.CollectResources)]
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
			<-collecting
			return nil, temporal.NewNonRetryableApplicationError("the cluster serves no VolumeSnapshot API", v1alpha1.ErrTypeSnapshotAPIMissing, nil)
		}).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
			collectStarted.Do(func() { close(collecting) })
			<-collectCanceled
			return nil, temporal.NewCanceledError()
		})
	env.OnActivity(storeActs.CleanupBackupWork, mock.Anything, mock.MatchedBy(func(in v1alpha1.CleanupInput) bool {
		return in.Discard && in.Phase == v1alpha1.PhaseFailed
	})).Return(nil).Once()
	started := startedActivities(env)

	runToFailure(t, env, "no VolumeSnapshot API")
	assert.True(t, isClosed(collectCanceled), "collection was not canceled")
	for _, after := range []any{hookActs.PlanBackupHooks, clusterActs.CollectRelated, storeActs.FinalizeBackup} {
		assert.NotContains(t, *started, workflows.ActivityName(after))
	}
}

// TestAFailedCollectionStopsVolumePlanning: a collection that fails for
// good cancels the volume planning running beside it, and is why the
// backup failed.
func TestAFailedCollectionStopsVolumePlanning(t *testing.T) {
	env := newBackupEnv(t)
	planning := make(chan struct{})
	canceled := canceledActivities(env, csiActs.PlanVolumes)
	planCanceled := canceled[workflows.ActivityName(csiActs.PlanVolumes)]
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
			close(planning)
			<-planCanceled
			return nil, temporal.NewCanceledError()
		}).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(
		func(context.Context, v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
			<-planning
			return nil, temporal.NewNonRetryableApplicationError("bad selector", v1alpha1.ErrTypeInvalidSpec, nil)
		})
	env.OnActivity(storeActs.CleanupBackupWork, mock.Anything, mock.Anything).Return(nil).Once()

	runToFailure(t, env, "bad selector")
	assert.True(t, isClosed(planCanceled), "the volume plan was not canceled")
}

// runToFailure runs the backup and requires that it failed, for reason,
// and was not canceled.
func runToFailure(t *testing.T, env *testsuite.TestWorkflowEnvironment, reason string) {
	t.Helper()
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), reason)
	assert.False(t, temporal.IsCanceledError(err), "the backup failed, it was not canceled: %v", err)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
