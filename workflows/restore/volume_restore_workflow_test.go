package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/workflows"
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
	env.RegisterWorkflowWithOptions(func(workflow.Context, workflows.VolumeRestoreRequest) (*workflows.VolumeRestoreResult, error) {
		return nil, nil
	},
		workflow.RegisterOptions{Name: workflows.VolumeRestoreWorkflowName})
	logs := flowtest.RestoredData()
	logs.ID, logs.Claim = workflows.VolumeRestoreID("shop", "logs"), "logs"
	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(flowtest.WithClaims(flowtest.RestoredData(), logs), nil).Once()
	done := map[string]bool{}
	env.OnWorkflow(workflows.VolumeRestoreWorkflowName, mock.Anything, mock.Anything).Return(func(_ workflow.Context, req workflows.VolumeRestoreRequest) (*workflows.VolumeRestoreResult, error) {
		done[req.Volume.Claim] = true
		if req.Volume.Claim == "logs" {
			return &workflows.VolumeRestoreResult{Phase: workflows.OperationFailed, Error: "moving the data failed 5 times, last: disk full"}, nil
		}
		return &workflows.VolumeRestoreResult{Phase: workflows.OperationCompleted, PersistentVolume: "pvc-1", Download: &workflows.DataDownloadInfo{Bytes: 10}}, nil
	}).Twice()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in workflows.ApplyInput) (*workflows.ApplyResult, error) {
		if in.Types[0].Resource != "persistentvolumeclaims" {
			assert.Nil(t, in.ClaimVolumes)
			return applied(in, func(workflows.RestoreType) workflows.TypeApplied {
				return workflows.TypeApplied{Outcome: workflows.TypeOutcome{Restored: 1}}
			}), nil
		}
		assert.Len(t, in.Types, 1, "claims are applied alone")
		assert.True(t, done["data"] && done["logs"], "claims wait for their volumes' data")
		assert.Equal(t, map[string]workflows.ClaimVolume{
			"shop/data": {PersistentVolume: "pvc-1"},
			"shop/logs": {Error: "its data was not restored (Failed): moving the data failed 5 times, last: disk full"},
		}, in.ClaimVolumes)
		return applied(in, func(workflows.RestoreType) workflows.TypeApplied {
			return workflows.TypeApplied{Outcome: workflows.TypeOutcome{Restored: 1, Failed: 1}}
		}), nil
	}).Twice()
	env.OnActivity(exposeActs.FinishVolumeRestores, mock.Anything, mock.Anything).Return(func(_ context.Context, in workflows.FinishVolumeRestoresInput) (*workflows.FinishVolumeRestoresResult, error) {
		assert.Equal(t, []workflows.ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: "pvc-1"}}, in.Bindings)
		assert.Equal(t, claimBindTimeout, in.Timeout)
		return &workflows.FinishVolumeRestoresResult{}, nil
	}).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.Anything).Return(&workflows.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(RestoreWorkflow, restoreRequest())
	require.NoError(t, env.GetWorkflowError())
	var st workflows.RestoreStatus
	require.NoError(t, env.GetWorkflowResult(&st))
	assert.Equal(t, workflows.PhasePartiallyFailed, st.Phase)
	assert.Contains(t, st.FailureReason, "1 of 2 volumes not restored: shop/logs: moving the data failed 5 times")
	require.Len(t, st.Volumes, 2)
	assert.True(t, st.Volumes[0].Bound)
	assert.Equal(t, "pvc-1", st.Volumes[0].PersistentVolume)
	assert.Equal(t, workflows.OperationFailed, st.Volumes[1].Phase)
}
