package volume

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// moveDataEnv runs one volume's child workflow with data movement, up to
// a ready snapshot; each test says how the data mover fares.
func moveDataEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, v1alpha1.VolumeSnapshotRequest) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterVolumeFakes(env)
	v := flowtest.TwoVolumes().Volumes[0]
	env.OnActivity(csiActs.CreateVolumeSnapshot, mock.Anything, mock.Anything).Return(&v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName("b", v)}, nil).Once()
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Once()
	env.OnActivity(exposeActs.CleanupExposure, mock.Anything, mock.Anything).Return(nil).Once()
	// The node's slots workflow grants the slot at once.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: "n1", Position: 0}) }, time.Second)
	env.OnSignalExternalWorkflow(mock.Anything, v1alpha1.DataMoverSlotsWorkflowID("n1"), "", v1alpha1.SignalReleaseSlot, mock.Anything).Return(nil).Once()
	return env, v1alpha1.VolumeSnapshotRequest{Backup: "b", Location: "mem://", OperationID: v1alpha1.VolumeOperationID(v), Volume: v,
		Timeout: time.Minute, MoveData: true, PrepareTimeout: time.Minute, DataTimeout: time.Hour, NativeSnapshots: v1alpha1.NativeSnapshotsDelete}
}

// runVolume runs the child workflow and returns its result.
func runVolume(t *testing.T, env *testsuite.TestWorkflowEnvironment, req v1alpha1.VolumeSnapshotRequest) v1alpha1.VolumeSnapshotResult {
	t.Helper()
	env.ExecuteWorkflow(VolumeSnapshotWorkflow, req)
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeSnapshotResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// TestDeadDataMoverIsReplaced: an upload whose data mover stops
// heartbeating is given to a fresh data mover (a new exposure attempt);
// once the data is moved, the native snapshot goes.
func TestDeadDataMoverIsReplaced(t *testing.T) {
	env, req := moveDataEnv(t)
	var attempts []int
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
			attempts = append(attempts, in.Attempt)
			assert.Equal(t, v1alpha1.DataMoverTaskQueue("b", req.Volume), in.TaskQueue)
			return &v1alpha1.ExposeResult{DataMover: "process 1", Node: "n1"}, nil
		}).Twice()
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).Return(&v1alpha1.DataUploadInfo{SnapshotID: "k1", Bytes: 10}, nil).Once()
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationCompleted, res.Phase)
	require.NotNil(t, res.Upload)
	assert.Equal(t, "k1", res.Upload.SnapshotID)
	assert.Equal(t, 2, res.Upload.Attempts)
	assert.Equal(t, "process 1", res.Upload.DataMover)
	assert.Equal(t, []int{1, 2}, attempts, "each attempt exposes the volume to its own data mover")
	assert.True(t, res.Snapshot.Deleted, "nativeSnapshots delete removes the snapshot after the move")
	env.AssertExpectations(t)
}

// TestDataMoverThatNeverStartsFailsWithTheExposersReason: no data mover
// polls within the prepare timeout; the operation fails, not retried,
// with what the exposer saw, and everything is cleaned up.
func TestDataMoverThatNeverStartsFailsWithTheExposersReason(t *testing.T) {
	env, req := moveDataEnv(t)
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "pod cairn/x-1"}, nil).Once()
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)).Once()
	env.OnActivity(exposeActs.DiagnoseExposure, mock.Anything, mock.Anything).
		Return(&v1alpha1.DiagnoseResult{Reason: "pod cairn/x-1 is Pending, PodScheduled: Unschedulable 0/3 nodes are available"}, nil).Once()
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "no data mover started within dataMoverPrepareTimeout 1m0s")
	assert.Contains(t, res.Error, "Unschedulable 0/3 nodes are available")
	env.AssertExpectations(t)
}

// TestWrongPasswordIsNotRetried: a non-retryable failure of the data
// mover ends the operation at once.
func TestWrongPasswordIsNotRetried(t *testing.T) {
	env, req := moveDataEnv(t)
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{}, nil).Once()
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("the repository password does not open the volume data repository", v1alpha1.ErrTypeRepositoryPassword, nil)).Once()
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "RepositoryPassword: the repository password does not open")
	env.AssertExpectations(t)
}

// TestSpentDataTimeoutFailsAsTheDataMoversTimeout: when the operation's
// dataMoverTimeout is spent (here while it waited for a slot), no data
// mover is started and the operation fails as the data mover's timeout,
// not the snapshot's readiness.
func TestSpentDataTimeoutFailsAsTheDataMoversTimeout(t *testing.T) {
	env, req := moveDataEnv(t)
	req.DataTimeout = time.Millisecond
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{}, nil).Once()
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "DataMoverTimeout: the data of snapshot")
	assert.Contains(t, res.Error, "was not moved within dataMoverTimeout 1ms")
	assert.NotContains(t, res.Error, "csiSnapshotTimeout")
	env.AssertExpectations(t)
}
