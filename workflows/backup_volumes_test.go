package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

func twoVolumes() *PlanVolumesResult {
	return &PlanVolumesResult{Volumes: []Volume{
		{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1", Driver: "d", VolumeHandle: "h1", SnapshotClass: "c"},
		{Namespace: "shop", Claim: "logs", PersistentVolume: "pv-2", Driver: "d", VolumeHandle: "h2", SnapshotClass: "c"},
	}, Warnings: 1}
}

func readyInfo(_ context.Context, in WaitSnapshotInput) (*SnapshotInfo, error) {
	return &SnapshotInfo{Name: in.Name, Content: "content-" + in.Volume.Claim, Handle: "snap-" + in.Volume.Claim, RestoreBytes: 1 << 20}, nil
}

// volumeBackupEnv is a backup of three types and two volumes, up to the
// snapshots being created; each test says how the waits end.
func volumeBackupEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := newBackupEnv(t)
	env.OnActivity(PlanBackupActivity, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(PlanVolumesActivity, mock.Anything, mock.Anything).Return(twoVolumes(), nil).Once()
	env.OnActivity(CollectActivity, mock.Anything, mock.Anything).Return(collected(1)).Times(3)
	env.OnActivity(CollectRelatedActivity, mock.Anything, mock.Anything).Return(&CollectRelatedResult{}, nil).Once()
	env.OnActivity(CreateVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in CreateSnapshotInput) (*CreateSnapshotResult, error) {
			return &CreateSnapshotResult{Name: SnapshotName(in.Backup, in.Volume)}, nil
		}).Twice()
	return env
}

// TestBackupSnapshotsVolumesAsOperations: each planned volume is one
// operation, run as a child workflow; the backup records the snapshots,
// collects them for the tarball and passes them to finalize.
func TestBackupSnapshotsVolumesAsOperations(t *testing.T) {
	env := volumeBackupEnv(t)
	env.OnActivity(WaitVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(readyInfo).Twice()
	env.OnActivity(CollectVolumeSnapshotsActivity, mock.Anything, mock.MatchedBy(func(in CollectSnapshotsInput) bool {
		return len(in.Operations) == 2 && in.Operations[0].Volume.Namespace == "shop"
	})).Return(&CollectSnapshotsResult{Resources: map[string]int{"volumesnapshots.snapshot.storage.k8s.io": 2}}, nil).Once()
	var finalized FinalizeInput
	env.OnActivity(FinalizeBackupActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in FinalizeInput) (*FinalizeResult, error) {
			finalized = in
			return &FinalizeResult{}, nil
		}).Once()
	env.OnActivity(CleanupBackupActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	assert.Equal(t, PhaseCompleted, st.Phase)
	assert.Equal(t, 1, st.Warnings)
	require.Len(t, st.Operations, 2)
	for _, op := range st.Operations {
		assert.Equal(t, OperationCompleted, op.Phase, op.ID)
		require.NotNil(t, op.Snapshot)
		assert.Equal(t, "snap-"+op.Volume.Claim, op.Snapshot.Handle)
		assert.Equal(t, DefaultCSISnapshotTimeout, op.Timeout)
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
	env.OnActivity(WaitVolumeSnapshotActivity, mock.Anything, mock.MatchedBy(func(in WaitSnapshotInput) bool { return in.Volume.Claim == "data" })).
		Return(readyInfo).Once()
	env.OnActivity(WaitVolumeSnapshotActivity, mock.Anything, mock.MatchedBy(func(in WaitSnapshotInput) bool { return in.Volume.Claim == "logs" })).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)).Once()
	removed := ""
	env.OnActivity(RemoveVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in RemoveSnapshotInput) error { removed = in.Volume.Claim; return nil }).Once()
	env.OnActivity(CollectVolumeSnapshotsActivity, mock.Anything, mock.MatchedBy(func(in CollectSnapshotsInput) bool {
		return len(in.Operations) == 1
	})).Return(&CollectSnapshotsResult{}, nil).Once()
	env.OnActivity(FinalizeBackupActivity, mock.Anything, mock.Anything).Return(&FinalizeResult{}, nil).Once()
	env.OnActivity(CleanupBackupActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	assert.Equal(t, PhasePartiallyFailed, st.Phase)
	assert.Equal(t, "logs", removed)
	assert.Equal(t, OperationCompleted, st.Operations[0].Phase)
	assert.Equal(t, OperationFailed, st.Operations[1].Phase)
	assert.Contains(t, st.Operations[1].Error, "was not ready within csiSnapshotTimeout 10m0s")
	assert.Contains(t, st.FailureReason, "1 of 2 volume operations failed: snapshot/shop/logs")
}

func TestSnapshotNameIsStableShortAndDistinct(t *testing.T) {
	v := Volume{Namespace: "shop", Claim: "a-very-long-claim-name-that-goes-on-and-on-and-on-forever"}
	a := SnapshotName("nightly-20261122020000", v)
	assert.Equal(t, a, SnapshotName("nightly-20261122020000", v))
	assert.LessOrEqual(t, len(a), 63)
	v2 := v
	v2.Namespace = "other"
	assert.NotEqual(t, a, SnapshotName("nightly-20261122020000", v2))
}
