package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func restoredData() RestoreVolume {
	return RestoreVolume{ID: VolumeRestoreID("shop", "data"), Namespace: "shop", Claim: "data", SnapshotID: "k1",
		StorageClass: "fast", AccessModes: []string{"ReadWriteMany"}, SizeBytes: 1 << 30}
}

// volumeRestoreEnv runs one volume's restore child workflow whose slot is
// granted at once.
func volumeRestoreEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	registerVolumeFakes(env)
	registerVolumeRestoreFakes(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalSlotUpdate, SlotUpdate{Node: "n1", Position: 0}) }, time.Second)
	env.OnSignalExternalWorkflow(mock.Anything, DataMoverSlotsWorkflowID("n1"), "", SignalReleaseSlot, mock.Anything).Return(nil).Once()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

type fakeVolumeRestoreActivities struct{}

func (fakeVolumeRestoreActivities) RestoreData(context.Context, RestoreVolumeDataInput) (*DataDownloadInfo, error) {
	return &DataDownloadInfo{}, nil
}
func (fakeVolumeRestoreActivities) HandOver(context.Context, ExposeInput) (*HandOverResult, error) {
	return &HandOverResult{}, nil
}
func (fakeVolumeRestoreActivities) Finish(context.Context, FinishVolumeRestoresInput) (*FinishVolumeRestoresResult, error) {
	return &FinishVolumeRestoresResult{}, nil
}

func registerVolumeRestoreFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeRestoreActivities{}
	env.RegisterActivityWithOptions(f.RestoreData, activity.RegisterOptions{Name: RestoreVolumeDataActivity})
	env.RegisterActivityWithOptions(f.HandOver, activity.RegisterOptions{Name: HandOverVolumeActivity})
	env.RegisterActivityWithOptions(f.Finish, activity.RegisterOptions{Name: FinishVolumeRestoresActivity})
	env.RegisterWorkflowWithOptions(VolumeRestoreWorkflow, workflow.RegisterOptions{Name: VolumeRestoreWorkflowName})
}

// TestVolumeRestoreWritesThenHandsOver: a fresh volume shaped like the
// claim is exposed, a dead data mover is replaced, and the volume is
// handed over only after the data is written and before the cleanup.
func TestVolumeRestoreWritesThenHandsOver(t *testing.T) {
	env := volumeRestoreEnv(t)
	var steps []string
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in ExposeInput) (*ExposeResult, error) {
		steps = append(steps, "expose")
		assert.Equal(t, ExposeRestore, in.Mode)
		assert.Equal(t, []string{"ReadWriteMany"}, in.AccessModes)
		assert.EqualValues(t, 1<<30, in.SnapshotSize)
		assert.Equal(t, "fast", in.Volume.StorageClass)
		assert.NotEqual(t, DataMoverTaskQueue("shop-r", in.Volume), in.TaskQueue, "a restore's queue is apart from a backup of the same name")
		return &ExposeResult{DataMover: "process 7", Node: "n1"}, nil
	}).Twice()
	env.OnActivity(RestoreVolumeDataActivity, mock.Anything, mock.Anything).
		Return(nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)).Once()
	env.OnActivity(RestoreVolumeDataActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in RestoreVolumeDataInput) (*DataDownloadInfo, error) {
		steps = append(steps, "restore")
		assert.Equal(t, "k1", in.SnapshotID)
		return &DataDownloadInfo{Bytes: 100, Files: 3, SkippedBytes: 40}, nil
	}).Once()
	env.OnActivity(HandOverVolumeActivity, mock.Anything, mock.Anything).Return(func(context.Context, ExposeInput) (*HandOverResult, error) {
		steps = append(steps, "hand over")
		return &HandOverResult{PersistentVolume: "pvc-123"}, nil
	}).Once()
	env.OnActivity(CleanupExposeActivity, mock.Anything, mock.Anything).Return(func(context.Context, ExposeInput) error {
		steps = append(steps, "cleanup")
		return nil
	}).Once()

	env.ExecuteWorkflow(VolumeRestoreWorkflow, VolumeRestoreRequest{Restore: "shop-r", Location: "mem://", Volume: restoredData(),
		PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, OperationCompleted, res.Phase)
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
	env.OnActivity(ExposeVolumeActivity, mock.Anything, mock.Anything).Return(&ExposeResult{DataMover: "process 7"}, nil).Once()
	env.OnActivity(RestoreVolumeDataActivity, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("kopia snapshot k1 is not in the repository", ErrTypeVolumeDataMissing, nil)).Once()
	env.OnActivity(CleanupExposeActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(VolumeRestoreWorkflow, VolumeRestoreRequest{Restore: "shop-r", Location: "mem://", Volume: restoredData(),
		PrepareTimeout: time.Minute, DataTimeout: time.Hour})
	require.NoError(t, env.GetWorkflowError())
	var res VolumeRestoreResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, OperationFailed, res.Phase)
	assert.Contains(t, res.Error, "not in the repository")
	assert.Empty(t, res.PersistentVolume)
}

// withClaims is a plan of a namespace and its claims, with volumes
// restored from the repository.
func withClaims(vols ...RestoreVolume) *RestorePlanResult {
	return &RestorePlanResult{BackupFormat: BackupFormatCairn, ItemsTotal: 1 + len(vols), Volumes: vols, Types: []RestoreType{
		{ResourceType: ResourceType{Version: "v1", Resource: "namespaces"}, Items: 1, Batches: 1},
		{ResourceType: ResourceType{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}, Items: len(vols), Batches: 1},
	}}
}

// TestRestoreBindsClaimsToTheirRestoredVolumes: the claims are applied
// only once their volumes' data is restored, each with its volume, and
// the restore waits for them to bind.
func TestRestoreBindsClaimsToTheirRestoredVolumes(t *testing.T) {
	env := newRestoreEnv(t)
	registerVolumeRestoreFakes(env)
	logs := restoredData()
	logs.ID, logs.Claim = VolumeRestoreID("shop", "logs"), "logs"
	env.OnActivity(PlanRestoreActivity, mock.Anything, mock.Anything).Return(withClaims(restoredData(), logs), nil).Once()
	done := map[string]bool{}
	env.OnWorkflow(VolumeRestoreWorkflowName, mock.Anything, mock.Anything).Return(func(_ workflow.Context, req VolumeRestoreRequest) (*VolumeRestoreResult, error) {
		done[req.Volume.Claim] = true
		if req.Volume.Claim == "logs" {
			return &VolumeRestoreResult{Phase: OperationFailed, Error: "moving the data failed 5 times, last: disk full"}, nil
		}
		return &VolumeRestoreResult{Phase: OperationCompleted, PersistentVolume: "pvc-1", Download: &DataDownloadInfo{Bytes: 10}}, nil
	}).Twice()
	env.OnActivity(ApplyActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in ApplyInput) (*ApplyResult, error) {
		if in.Type.Resource != "persistentvolumeclaims" {
			assert.Nil(t, in.ClaimVolumes)
			return &ApplyResult{Outcome: TypeOutcome{Restored: 1}}, nil
		}
		assert.True(t, done["data"] && done["logs"], "claims wait for their volumes' data")
		assert.Equal(t, map[string]ClaimVolume{
			"shop/data": {PersistentVolume: "pvc-1"},
			"shop/logs": {Error: "its data was not restored (Failed): moving the data failed 5 times, last: disk full"},
		}, in.ClaimVolumes)
		return &ApplyResult{Outcome: TypeOutcome{Restored: 1, Failed: 1}}, nil
	}).Twice()
	env.OnActivity(FinishVolumeRestoresActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in FinishVolumeRestoresInput) (*FinishVolumeRestoresResult, error) {
		assert.Equal(t, []ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: "pvc-1"}}, in.Bindings)
		assert.Equal(t, claimBindTimeout, in.Timeout)
		return &FinishVolumeRestoresResult{}, nil
	}).Once()
	env.OnActivity(FinalizeRestoreActivity, mock.Anything, mock.Anything).Return(&FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(CleanupRestoreActivity, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	var st RestoreStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	assert.Equal(t, PhasePartiallyFailed, st.Phase)
	assert.Contains(t, st.FailureReason, "1 of 2 volumes not restored: shop/logs: moving the data failed 5 times")
	require.Len(t, st.Volumes, 2)
	assert.True(t, st.Volumes[0].Bound)
	assert.Equal(t, "pvc-1", st.Volumes[0].PersistentVolume)
	assert.Equal(t, OperationFailed, st.Volumes[1].Phase)
}
