package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// TestRestoreBindsClaimsToTheirRestoredVolumes: the claims are applied
// only once their volumes' data is restored, each with its volume, and
// the restore waits for them to bind.
func TestRestoreBindsClaimsToTheirRestoredVolumes(t *testing.T) {
	env := newRestoreEnv(t)
	flowtest.RegisterVolumeRestoreFakes(env)
	// The volume restores are mocked below; this stands in for the volume
	// package's workflow under its name.
	env.RegisterWorkflowWithOptions(func(workflow.Context, v1alpha1.VolumeRestoreRequest) (*v1alpha1.VolumeRestoreResult, error) {
		return nil, nil
	},
		workflow.RegisterOptions{Name: v1alpha1.VolumeRestoreWorkflowName})
	logs := flowtest.RestoredData()
	logs.ID, logs.Claim = v1alpha1.VolumeRestoreID("shop", "logs"), "logs"
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(flowtest.WithClaims(flowtest.RestoredData(), logs), nil).Once()
	done := map[string]bool{}
	env.OnWorkflow(v1alpha1.VolumeRestoreWorkflowName, mock.Anything, mock.Anything).Return(func(_ workflow.Context, req v1alpha1.VolumeRestoreRequest) (*v1alpha1.VolumeRestoreResult, error) {
		done[req.Volume.Claim] = true
		if req.Volume.Claim == "logs" {
			return &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationFailed, Error: "moving the data failed 5 times, last: disk full"}, nil
		}
		return &v1alpha1.VolumeRestoreResult{Phase: v1alpha1.OperationCompleted, PersistentVolume: "pvc-1", Download: &v1alpha1.DataDownloadInfo{Bytes: 10}}, nil
	}).Twice()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		if in.Types[0].Resource != "persistentvolumeclaims" {
			assert.Nil(t, in.ClaimVolumes)
			return applied(in, func(v1alpha1.RestoreType) v1alpha1.TypeApplied {
				return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 1}}
			}), nil
		}
		assert.Len(t, in.Types, 1, "claims are applied alone")
		assert.True(t, done["data"] && done["logs"], "claims wait for their volumes' data")
		assert.Equal(t, map[string]v1alpha1.ClaimVolume{
			"shop/data": {PersistentVolume: "pvc-1"},
			"shop/logs": {Error: "its data was not restored (Failed): moving the data failed 5 times, last: disk full"},
		}, in.ClaimVolumes)
		return applied(in, func(v1alpha1.RestoreType) v1alpha1.TypeApplied {
			return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: 1, Failed: 1}}
		}), nil
	}).Twice()
	env.OnActivity(exposeActs.FinishVolumeRestores, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.FinishVolumeRestoresInput) (*v1alpha1.FinishVolumeRestoresResult, error) {
		assert.Equal(t, []v1alpha1.ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: "pvc-1"}}, in.Bindings)
		assert.Equal(t, claimBindTimeout, in.Timeout)
		return &v1alpha1.FinishVolumeRestoresResult{}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	var st v1alpha1.RestoreStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, st.Phase)
	assert.Contains(t, st.FailureReason, "1 of 2 volumes not restored: shop/logs: moving the data failed 5 times")
	require.Len(t, st.Volumes, 2)
	assert.True(t, st.Volumes[0].Bound)
	assert.Equal(t, "pvc-1", st.Volumes[0].PersistentVolume)
	assert.Equal(t, v1alpha1.OperationFailed, st.Volumes[1].Phase)
}
