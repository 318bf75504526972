package restore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
	"github.com/cairn-backup/cairn/workflows/volume"
)

// The data mover's restore activity, which this test fakes.
var datamoverActs *datamover.Activities

// The events a restore's history may hold, whatever its volumes' data
// takes to write: the restore of 20 volumes that
// TestRestoreHistoryIsBoundedWhateverTheMovesLast runs (about 30 events
// a volume: its child, and the phase changes it signals), and each
// volume's own child workflow. Temporal ends a run at 51,200 events.
const (
	restoreOf20VolumesEvents = 700
	volumeRestoreEvents      = 120
)

// runMovingRestore restores a namespace and n claims whose data each
// takes moveFor to write, on one node with 4 data mover slots, 6 volumes
// at once, on the test environment's clock.
func runMovingRestore(t *testing.T, volumes int, moveFor time.Duration) (v1alpha1.RestoreStatus, flowtest.SimulatedRun) {
	env := newRestoreEnv(t)
	env.RegisterWorkflowWithOptions(RestoreWorkflow, workflow.RegisterOptions{Name: v1alpha1.RestoreWorkflowName})
	env.RegisterWorkflowWithOptions(volume.VolumeRestoreWorkflow, workflow.RegisterOptions{Name: v1alpha1.VolumeRestoreWorkflowName})
	flowtest.RegisterVolumeFakes(env)
	flowtest.RegisterVolumeRestoreFakes(env)

	var vols []v1alpha1.RestoreVolume
	var targets []v1alpha1.Volume
	index := map[string]int{} // by kopia snapshot
	for i := range volumes {
		v := flowtest.RestoredData()
		v.Claim = fmt.Sprintf("data-%02d", i)
		v.ID, v.SnapshotID = v1alpha1.VolumeRestoreID(v.Namespace, v.Claim), "k-"+v.Claim
		vols = append(vols, v)
		index[v.SnapshotID] = i
		targets = append(targets, v.Target())
	}
	node := flowtest.SimulateNode(env, "n1", 4, targets)

	env.OnActivity(restoreActs.PlanRestore, mock.Anything, mock.Anything).Return(flowtest.WithClaims(vols...), nil).Once()
	env.OnActivity(restoreActs.ApplyResources, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		return applied(in, func(v1alpha1.RestoreType) v1alpha1.TypeApplied {
			return v1alpha1.TypeApplied{Outcome: v1alpha1.TypeOutcome{Restored: max(1, len(in.ClaimVolumes))}}
		}), nil
	}).Twice()
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "pod", Node: "n1"}, nil).Times(volumes)
	flowtest.LongMoves(env, datamoverActs.RestoreVolumeData, moveFor, volumes,
		func(in v1alpha1.RestoreVolumeDataInput) int { return index[in.SnapshotID] },
		func(v1alpha1.RestoreVolumeDataInput) *v1alpha1.DataDownloadInfo {
			return &v1alpha1.DataDownloadInfo{Bytes: 1 << 40}
		})
	env.OnActivity(exposeActs.HandOverVolume, mock.Anything, mock.Anything).Return(func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.HandOverResult, error) {
		return &v1alpha1.HandOverResult{PersistentVolume: "pv-" + in.Volume.Claim}, nil
	}).Times(volumes)
	env.OnActivity(exposeActs.FinishVolumeRestores, mock.Anything, mock.Anything).Return(&v1alpha1.FinishVolumeRestoresResult{}, nil).Once()
	env.OnActivity(restoreActs.FinalizeRestore, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeRestoreResult{}, nil).Once()
	env.OnActivity(restoreActs.CleanupRestoreWork, mock.Anything, mock.Anything).Return(nil).Once()

	req := restoreRequest()
	req.Spec.DataMoverTimeout = &metav1.Duration{Duration: 3 * moveFor}
	req.Options.VolumeConcurrency = 6
	var st v1alpha1.RestoreStatus
	run := flowtest.RunOnNode(t, env, node, v1alpha1.RestoreWorkflowName, req, &st)
	return st, run
}

// TestRestoreHistoryIsBoundedWhateverTheMovesLast: a restore whose 20
// volumes each take a simulated 8 hours to write asks of Temporal
// exactly what the same restore does when each takes an hour, and its
// history and each volume's stay under the stated bounds.
func TestRestoreHistoryIsBoundedWhateverTheMovesLast(t *testing.T) {
	const volumes = 20
	shortStatus, short := runMovingRestore(t, volumes, time.Hour)
	longStatus, long := runMovingRestore(t, volumes, 8*time.Hour)

	for _, st := range []v1alpha1.RestoreStatus{shortStatus, longStatus} {
		require.Equal(t, v1alpha1.PhaseCompleted, st.Phase, st.FailureReason)
		require.Len(t, st.Volumes, volumes)
		for _, v := range st.Volumes {
			require.Equal(t, v1alpha1.OperationCompleted, v.Phase, v.ID)
			require.True(t, v.Bound, v.ID)
		}
	}
	flowtest.AssertBoundedWhateverTheDuration(t, short, long, volumes/4*8*time.Hour, // 4 slots
		v1alpha1.RestoreWorkflowName, v1alpha1.VolumeRestoreWorkflowName, restoreOf20VolumesEvents, volumeRestoreEvents)
}
