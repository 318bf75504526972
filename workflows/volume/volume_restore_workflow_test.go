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

// volumeRestoreEnv runs one volume's restore child workflow whose slot is
// granted at once.
func volumeRestoreEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterVolumeFakes(env)
	flowtest.RegisterVolumeRestoreFakes(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: "n1", Position: 0}) }, time.Second)
	env.OnSignalExternalWorkflow(mock.Anything, v1alpha1.DataMoverSlotsWorkflowID("n1"), "", v1alpha1.SignalReleaseSlot, mock.Anything).Return(nil).Once()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// TestVolumeRestoreWritesThenHandsOver: a fresh volume shaped like the
// claim is exposed, a dead data mover is replaced, and the volume is
// handed over only after the data is written and before the cleanup.
func TestVolumeRestoreWritesThenHandsOver(t *testing.T) {
	env := volumeRestoreEnv(t)
	var steps []string
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
		steps = append(steps, "expose")
		assert.Equal(t, v1alpha1.ExposeRestore, in.Mode)
		assert.Equal(t, []string{"ReadWriteMany"}, in.AccessModes)
		assert.EqualValues(t, 1<<30, in.SnapshotSize)
		assert.Equal(t, "fast", in.Volume.StorageClass)
		assert.NotEqual(t, v1alpha1.DataMoverTaskQueue("shop-r", in.Volume), in.TaskQueue, "a restore's queue is apart from a backup of the same name")
		return &v1alpha1.ExposeResult{DataMover: "process 7", Node: "n1"}, nil
	}).Twice()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.RestoreVolumeDataInput) (*v1alpha1.DataDownloadInfo, error) {
		steps = append(steps, "restore")
		assert.Equal(t, "k1", in.SnapshotID)
		return &v1alpha1.DataDownloadInfo{Bytes: 100, Files: 3, SkippedBytes: 40}, nil
	}).Once()
	env.OnActivity(exposeActs.HandOverVolume, mock.Anything, mock.Anything).Return(func(context.Context, v1alpha1.ExposeInput) (*v1alpha1.HandOverResult, error) {
		steps = append(steps, "hand over")
		return &v1alpha1.HandOverResult{PersistentVolume: "pvc-123"}, nil
	}).Once()
	env.OnActivity(exposeActs.CleanupExposure, mock.Anything, mock.Anything).Return(func(context.Context, v1alpha1.ExposeInput) error {
		steps = append(steps, "cleanup")
		return nil
	}).Once()

	env.ExecuteWorkflow(VolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "shop-r", Location: "mem://", Volume: flowtest.RestoredData(),
		PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.OperationCompleted, res.Phase)
	assert.Equal(t, "pvc-123", res.PersistentVolume)
	require.NotNil(t, res.Download)
	assert.Equal(t, 2, res.Download.Attempts)
	assert.EqualValues(t, 40, res.Download.SkippedBytes)
	assert.Equal(t, []string{"expose", "expose", "restore", "hand over", "cleanup"}, steps)
}

// TestVolumeRestoreOfMissingDataFailsWithoutRetry: a kopia snapshot that
// is not in the repository is not retried on another data mover, and
// nothing is handed over.
func TestVolumeRestoreOfMissingDataFailsWithoutRetry(t *testing.T) {
	env := volumeRestoreEnv(t)
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "process 7"}, nil).Once()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("kopia snapshot k1 is not in the repository", v1alpha1.ErrTypeVolumeDataMissing, nil)).Once()
	env.OnActivity(exposeActs.CleanupExposure, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(VolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "shop-r", Location: "mem://", Volume: flowtest.RestoredData(),
		PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "not in the repository")
	assert.Empty(t, res.PersistentVolume)
}
