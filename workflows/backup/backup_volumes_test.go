package backup

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// volumeBackupEnv is a backup of three types and two volumes, up to the
// snapshots being created; each test says how the waits end.
func volumeBackupEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(flowtest.TwoVolumes(), nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(1)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	env.OnActivity(csiActs.CreateVolumeSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
			return &v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName(in.Backup, in.Volume)}, nil
		}).Twice()
	return env
}

// logsWaitEndsWith makes the wait for volume data's snapshot succeed and
// the wait for logs' end with err.
func logsWaitEndsWith(env *testsuite.TestWorkflowEnvironment, err error) {
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.MatchedBy(func(in v1alpha1.WaitSnapshotInput) bool { return in.Volume.Claim == "data" })).
		Return(flowtest.ReadyInfo).Once()
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.MatchedBy(func(in v1alpha1.WaitSnapshotInput) bool { return in.Volume.Claim == "logs" })).
		Return(nil, err).Once()
}

// runToEnd runs the backup of testRequest and returns its final status.
func runToEnd(t *testing.T, env *testsuite.TestWorkflowEnvironment) v1alpha1.BackupStatus {
	t.Helper()
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st v1alpha1.BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	return st
}

// TestBackupSnapshotsVolumesAsOperations: each planned volume is one
// operation, run as a child workflow; the backup records the snapshots,
// collects them for the tarball and passes them to finalize.
func TestBackupSnapshotsVolumesAsOperations(t *testing.T) {
	env := volumeBackupEnv(t)
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Twice()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.MatchedBy(func(in v1alpha1.CollectSnapshotsInput) bool {
		return len(in.Operations) == 2 && in.Operations[0].Volume.Namespace == "shop"
	})).Return(&v1alpha1.CollectSnapshotsResult{Resources: map[string]int{"volumesnapshots.snapshot.storage.k8s.io": 2}}, nil).Once()
	var finalized v1alpha1.FinalizeInput
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
			finalized = in
			return &v1alpha1.FinalizeResult{Warnings: in.Status.Warnings}, nil // the stored warnings are the plan's
		}).Once()

	st := runToEnd(t, env)
	assert.Equal(t, v1alpha1.PhaseCompleted, st.Phase)
	assert.Equal(t, 1, st.Warnings)
	require.Len(t, st.Operations, 2)
	for _, op := range st.Operations {
		assert.Equal(t, v1alpha1.OperationCompleted, op.Phase, op.ID)
		require.NotNil(t, op.Snapshot)
		assert.Equal(t, "snap-"+op.Volume.Claim, op.Snapshot.Handle)
		assert.Equal(t, v1alpha1.DefaultCSISnapshotTimeout, op.Timeout)
		assert.NotNil(t, op.Started)
	}
	assert.Equal(t, 2, st.Resources["volumesnapshots.snapshot.storage.k8s.io"].Items)
	assert.Len(t, finalized.Status.Operations, 2, "finalize writes operations.json and volumes.json from them")
}

// TestVolumeTimeoutFailsItsOperationOnly: a snapshot not ready in time is
// removed, its operation Failed with the reason, and the backup ends
// PartiallyFailed instead of Failed.
func TestVolumeTimeoutFailsItsOperationOnly(t *testing.T) {
	env := volumeBackupEnv(t)
	logsWaitEndsWith(env, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil))
	removed := ""
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.RemoveSnapshotInput) error { removed = in.Volume.Claim; return nil }).Once()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.MatchedBy(func(in v1alpha1.CollectSnapshotsInput) bool {
		return len(in.Operations) == 1
	})).Return(&v1alpha1.CollectSnapshotsResult{}, nil).Once()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()

	st := runToEnd(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, st.Phase)
	assert.Equal(t, "logs", removed)
	assert.Equal(t, v1alpha1.OperationCompleted, st.Operations[0].Phase)
	assert.Equal(t, v1alpha1.OperationFailed, st.Operations[1].Phase)
	assert.Contains(t, st.Operations[1].Error, "was not ready within csiSnapshotTimeout 10m0s")
	assert.Contains(t, st.FailureReason, "1 of 2 volume operations failed: snapshot/shop/logs")
}

// TestVolumeCanceledWithoutItsBackupFailsItsOperation: a volume's
// operation that ends canceled while its backup goes on (a step that
// stopped on its own, a child canceled by hand) leaves its volume out:
// the backup says so, PartiallyFailed, not Completed.
func TestVolumeCanceledWithoutItsBackupFailsItsOperation(t *testing.T) {
	env := volumeBackupEnv(t)
	logsWaitEndsWith(env, temporal.NewCanceledError("stopped"))
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.Anything).Return(&v1alpha1.CollectSnapshotsResult{}, nil).Once()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()

	st := runToEnd(t, env)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, st.Phase)
	assert.Equal(t, v1alpha1.OperationCompleted, st.Operations[0].Phase)
	assert.Equal(t, v1alpha1.OperationFailed, st.Operations[1].Phase)
	assert.Equal(t, "canceled on its own while its run went on", st.Operations[1].Error)
}

func TestSnapshotNameIsStableShortAndDistinct(t *testing.T) {
	v := v1alpha1.Volume{Namespace: "shop", Claim: "a-very-long-claim-name-that-goes-on-and-on-and-on-forever"}
	a := v1alpha1.SnapshotName("nightly-20261122020000", v)
	assert.Equal(t, a, v1alpha1.SnapshotName("nightly-20261122020000", v))
	assert.LessOrEqual(t, len(a), 63)
	v2 := v
	v2.Namespace = "other"
	assert.NotEqual(t, a, v1alpha1.SnapshotName("nightly-20261122020000", v2))
}

// TestDataMovingBackupCreatesTheRepositoryBeforeAnySnapshot: a backup that
// moves data makes sure of the location's repository right after planning
// its volumes, once; a wrong repository password fails it there, before
// any snapshot is taken or data mover started, and before what comes
// after collection.
func TestDataMovingBackupCreatesTheRepositoryBeforeAnySnapshot(t *testing.T) {
	env := newBackupEnv(t)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(flowtest.TwoVolumes(), nil).Once()
	env.OnActivity(repositoryActs.EnsureRepository, mock.Anything, v1alpha1.EnsureRepositoryInput{Backup: "shop-1", Location: "mem://"}).
		Return(temporal.NewNonRetryableApplicationError("wrong password", v1alpha1.ErrTypeRepositoryPassword, nil)).Once()
	started := startedActivities(env)
	req := testRequest()
	req.Spec.SnapshotMoveData = true

	env.ExecuteWorkflow(BackupWorkflow, req)
	require.Error(t, env.GetWorkflowError())
	assert.Contains(t, env.GetWorkflowError().Error(), "wrong password (type: RepositoryPassword")
	assert.Equal(t, "PlanBackup", (*started)[0])
	assert.Less(t, slices.Index(*started, "PlanVolumes"), slices.Index(*started, "EnsureRepository"))
	assert.Len(t, slices.DeleteFunc(slices.Clone(*started), func(a string) bool { return a != "EnsureRepository" }), 1)
	for _, after := range []any{csiActs.CreateVolumeSnapshot, clusterActs.CollectRelated, storeActs.FinalizeBackup} {
		assert.NotContains(t, *started, workflows.ActivityName(after))
	}
}

// TestBackupThatMovesNoDataLeavesTheRepositoryAlone: snapshots without
// data movement open no repository.
func TestBackupThatMovesNoDataLeavesTheRepositoryAlone(t *testing.T) {
	env := volumeBackupEnv(t)
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Twice()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.Anything).Return(&v1alpha1.CollectSnapshotsResult{}, nil).Once()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()
	var started []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		started = append(started, info.ActivityType.Name)
	})
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	assert.Contains(t, started, workflows.ActivityName(csiActs.CreateVolumeSnapshot))
	assert.NotContains(t, started, workflows.ActivityName(repositoryActs.EnsureRepository))
}
