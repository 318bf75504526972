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

// TestPodVolumeRestoreWritesIntoTheWaitingPod: the data mover is exposed
// on the node where the restored pod waits, in its volume's directory,
// a dead one is replaced, and the data mover writes the volume's marker
// with the data; nothing else tells the pod anything.
func TestPodVolumeRestoreWritesIntoTheWaitingPod(t *testing.T) {
	env := volumeRestoreEnv(t)
	var exposed []v1alpha1.ExposeInput
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
		exposed = append(exposed, in)
		return &v1alpha1.ExposeResult{DataMover: "pod cairn/dm", Node: "n1"}, nil
	}).Twice()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	var task v1alpha1.RestoreVolumeDataInput
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.RestoreVolumeDataInput) (*v1alpha1.DataDownloadInfo, error) {
		task = in
		return &v1alpha1.DataDownloadInfo{Bytes: 100, Files: 3}, nil
	}).Once()
	env.OnActivity(datamoverActs.MarkPodVolume, mock.Anything, mock.Anything).Return(nil).Never()

	env.ExecuteWorkflow(PodVolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "r1", Backup: "b1", Location: "mem://",
		Volume: flowtest.RestoredPodVolume(), PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.OperationCompleted, res.Phase, res.Error)
	require.NotNil(t, res.Download)
	assert.Equal(t, 2, res.Download.Attempts)
	require.Len(t, exposed, 2)
	in := exposed[1]
	assert.Equal(t, v1alpha1.ExposeFSRestore, in.Mode)
	require.NotNil(t, in.Volume.PodVolume)
	assert.Equal(t, "uid-1", in.Volume.PodVolume.UID, "the restored pod's, found waiting")
	assert.Equal(t, "n1", in.Volume.PodVolume.Node)
	assert.Equal(t, "volumes/kubernetes.io~empty-dir/cache", in.Volume.PodVolume.Dir)
	assert.Equal(t, "cache", task.Marker)
	assert.Equal(t, "shop/web/cache", task.SourceVolume)
	assert.Equal(t, "k2", task.SnapshotID)
}

// TestFailedPodVolumeRestoreReleasesThePod: a copy whose data is not in
// the repository fails without another data mover, and a data mover on
// the pod's node writes the reason into the volume's marker, so the
// pod's init container ends with it instead of waiting forever.
func TestFailedPodVolumeRestoreReleasesThePod(t *testing.T) {
	env := volumeRestoreEnv(t)
	// The release takes a slot of its own.
	env.OnSignalExternalWorkflow(mock.Anything, v1alpha1.DataMoverSlotsWorkflowID("n1"), "", v1alpha1.SignalReleaseSlot, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: "n1", Position: 0}) }, 2*time.Second)
	var modes []string
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
		modes = append(modes, in.TaskQueue)
		return &v1alpha1.ExposeResult{DataMover: "pod cairn/dm", Node: "n1"}, nil
	}).Twice()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("snapshot k2 is gone", v1alpha1.ErrTypeVolumeDataMissing, nil)).Once()
	var mark v1alpha1.MarkPodVolumeInput
	env.OnActivity(datamoverActs.MarkPodVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.MarkPodVolumeInput) error {
		mark = in
		return nil
	}).Once()

	env.ExecuteWorkflow(PodVolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "r1", Backup: "b1", Location: "mem://",
		Volume: flowtest.RestoredPodVolume(), PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "snapshot k2 is gone")
	assert.Equal(t, "cache", mark.Marker)
	assert.Contains(t, mark.Content, "snapshot k2 is gone")
	assert.NotEqual(t, v1alpha1.MarkerRestored, mark.Content)
	require.Len(t, modes, 2)
	assert.NotEqual(t, modes[0], modes[1], "the release's data mover polls a queue of its own")
}

// TestPodVolumeRestoreOfAPodThatDoesNotWait: a pod this restore did not
// make wait (it existed) fails the volume at once, with no data mover.
func TestPodVolumeRestoreOfAPodThatDoesNotWait(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterVolumeFakes(env)
	flowtest.RegisterVolumeRestoreFakes(env)
	env.OnActivity(exposeActs.AwaitRestoredPod, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("pod shop/web was not created by this restore", v1alpha1.ErrTypePodGone, nil)).Once()
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(nil, nil).Never()
	env.ExecuteWorkflow(PodVolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "r1", Location: "mem://",
		Volume: flowtest.RestoredPodVolume(), PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "not created by this restore")
	env.AssertExpectations(t)
}

// TestPodVolumeReleasedAfterTheRestoreEnded: a volume whose restore ended
// before its child started only waits for its pod (one that does not
// exist by now never will) and tells it why, without any data.
func TestPodVolumeReleasedAfterTheRestoreEnded(t *testing.T) {
	env := volumeRestoreEnv(t)
	var awaited v1alpha1.AwaitRestoredPodInput
	env.OnActivity(exposeActs.AwaitRestoredPod, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.AwaitRestoredPodInput) (*v1alpha1.PodVolume, error) {
		awaited = in
		return &v1alpha1.PodVolume{Pod: in.Pod, Volume: in.Volume, UID: "uid-1", Node: "n1", Dir: "volumes/kubernetes.io~empty-dir/cache"}, nil
	}).Once()
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "pod cairn/dm", Node: "n1"}, nil).Once()
	env.OnActivity(datamoverActs.RestoreVolumeData, mock.Anything, mock.Anything).Return(nil, nil).Never()
	var mark v1alpha1.MarkPodVolumeInput
	env.OnActivity(datamoverActs.MarkPodVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.MarkPodVolumeInput) error {
		mark = in
		return nil
	}).Once()

	env.ExecuteWorkflow(PodVolumeRestoreWorkflow, v1alpha1.VolumeRestoreRequest{Restore: "r1", Backup: "b1", Location: "mem://",
		Volume: flowtest.RestoredPodVolume(), PrepareTimeout: time.Minute, DataTimeout: time.Hour, Release: "canceled before it started"})
	require.Error(t, env.GetWorkflowError())
	assert.True(t, awaited.Ended, "a pod that does not exist now never will")
	assert.Equal(t, "restore r1: canceled before it started", mark.Content)
	env.AssertExpectations(t)
}
