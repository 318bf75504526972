package workflows

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
)

// moveDataEnv runs one volume's child workflow with data movement, up to
// a ready snapshot; each test says how the data mover fares.
func moveDataEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, VolumeSnapshotRequest) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	registerVolumeFakes(env)
	v := twoVolumes().Volumes[0]
	env.OnActivity(CreateVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(&CreateSnapshotResult{Name: SnapshotName("b", v)}, nil).Once()
	env.OnActivity(WaitVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(readyInfo).Once()
	env.OnActivity(CleanupExposeActivity, mock.Anything, mock.Anything).Return(nil).Once()
	// The node's slots workflow grants the slot at once.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalSlotUpdate, SlotUpdate{Node: "n1", Position: 0}) }, time.Second)
	env.OnSignalExternalWorkflow(mock.Anything, DataMoverSlotsWorkflowID("n1"), "", SignalReleaseSlot, mock.Anything).Return(nil).Once()
	return env, VolumeSnapshotRequest{Backup: "b", Location: "mem://", OperationID: VolumeOperationID(v), Volume: v,
		Timeout: time.Minute, MoveData: true, PrepareTimeout: time.Minute, DataTimeout: time.Hour, NativeSnapshots: NativeSnapshotsDelete}
}

// runVolume runs the child workflow and returns its result.
func runVolume(t *testing.T, env *testsuite.TestWorkflowEnvironment, req VolumeSnapshotRequest) VolumeSnapshotResult {
	t.Helper()
	env.ExecuteWorkflow(VolumeSnapshotWorkflow, req)
	require.NoError(t, env.GetWorkflowError())
	var res VolumeSnapshotResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// TestDeadDataMoverIsReplaced: an upload whose data mover stops
// heartbeating is given to a fresh data mover (a new exposure attempt);
// once the data is moved, the native snapshot goes.
func TestDeadDataMoverIsReplaced(t *testing.T) {
	env, req := moveDataEnv(t)
	var attempts []int
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in ExposeInput) (*ExposeResult, error) {
			attempts = append(attempts, in.Attempt)
			assert.Equal(t, DataMoverTaskQueue("b", req.Volume), in.TaskQueue)
			return &ExposeResult{DataMover: "process 1", Node: "n1"}, nil
		}).Twice()
	env.OnActivity(UploadVolumeActivity, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	env.OnActivity(UploadVolumeActivity, mock.Anything, mock.Anything).Return(&DataUploadInfo{SnapshotID: "k1", Bytes: 10}, nil).Once()
	env.OnActivity(RemoveVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, OperationCompleted, res.Phase)
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
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(&ExposeResult{DataMover: "pod cairn/x-1"}, nil).Once()
	env.OnActivity(UploadVolumeActivity, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)).Once()
	env.OnActivity(DiagnoseExposeActivity, mock.Anything, mock.Anything).
		Return(&DiagnoseResult{Reason: "pod cairn/x-1 is Pending, PodScheduled: Unschedulable 0/3 nodes are available"}, nil).Once()
	env.OnActivity(RemoveVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "no data mover started within dataMoverPrepareTimeout 1m0s")
	assert.Contains(t, res.Error, "Unschedulable 0/3 nodes are available")
	env.AssertExpectations(t)
}

// TestWrongPasswordIsNotRetried: a non-retryable failure of the data
// mover ends the operation at once.
func TestWrongPasswordIsNotRetried(t *testing.T) {
	env, req := moveDataEnv(t)
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(&ExposeResult{}, nil).Once()
	env.OnActivity(UploadVolumeActivity, mock.Anything, mock.Anything).Return(nil,
		temporal.NewNonRetryableApplicationError("the repository password does not open the volume data repository", ErrTypeRepositoryPassword, nil)).Once()
	env.OnActivity(RemoveVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, OperationFailed, res.Phase)
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
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(&ExposeResult{}, nil).Once()
	env.OnActivity(RemoveVolumeSnapshotActivity, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "DataMoverTimeout: the data of snapshot")
	assert.Contains(t, res.Error, "was not moved within dataMoverTimeout 1ms")
	assert.NotContains(t, res.Error, "csiSnapshotTimeout")
	env.AssertExpectations(t)
}
