package backup

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
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// The volume child's activities that this test fakes.
var (
	datamoverActs *datamover.Activities
	exposeActs    *expose.Activities
)

// The events a backup's history may hold, whatever its volumes' data
// moves last: the backup of 3 resource types and 20 volumes that
// TestBackupHistoryIsBoundedWhateverTheMovesLast runs (about 35 events a
// volume: its child, and the phase changes it signals), and each
// volume's own child workflow. Temporal ends a run at 51,200 events.
const (
	backupOf20VolumesEvents = 900
	volumeSnapshotEvents    = 120
)

// runMovingBackup runs a backup of three resource types and n volumes
// on one node with 4 data mover slots, 6 volumes at once, each volume's
// data taking moveFor to move, on the test environment's clock.
func runMovingBackup(t *testing.T, volumes int, moveFor time.Duration) (v1alpha1.BackupStatus, flowtest.SimulatedRun) {
	env := newBackupEnv(t)
	env.RegisterWorkflowWithOptions(BackupWorkflow, workflow.RegisterOptions{Name: v1alpha1.BackupWorkflowName})

	plan := &v1alpha1.PlanVolumesResult{}
	for i := range volumes {
		plan.Volumes = append(plan.Volumes, v1alpha1.Volume{Namespace: "shop", Claim: fmt.Sprintf("data-%02d", i),
			PersistentVolume: fmt.Sprintf("pv-%02d", i), Driver: "d", VolumeHandle: fmt.Sprintf("h%02d", i), SnapshotClass: "c"})
	}
	node := flowtest.SimulateNode(env, "n1", 4, plan.Volumes)
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(plan, nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(10)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	env.OnActivity(csiActs.CreateVolumeSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
			return &v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName(in.Backup, in.Volume)}, nil
		}).Times(volumes)
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Times(volumes)
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "pod", Node: "n1"}, nil).Times(volumes)
	index := map[string]int{}
	for i, v := range plan.Volumes {
		index[v.Key()] = i
	}
	flowtest.LongMoves(env, datamoverActs.UploadVolume, moveFor, volumes,
		func(in v1alpha1.UploadVolumeInput) int { return index[in.Volume.Key()] },
		func(in v1alpha1.UploadVolumeInput) *v1alpha1.DataUploadInfo {
			return &v1alpha1.DataUploadInfo{SnapshotID: "k-" + in.Volume.Claim, Bytes: 1 << 40}
		})
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()

	req := testRequest()
	req.Spec.SnapshotMoveData = true
	req.Spec.DataMoverTimeout = &metav1.Duration{Duration: 3 * moveFor}
	req.Options.VolumeConcurrency = 6
	var st v1alpha1.BackupStatus
	run := flowtest.RunOnNode(t, env, node, v1alpha1.BackupWorkflowName, req, &st)
	return st, run
}

// TestBackupHistoryIsBoundedWhateverTheMovesLast: a backup whose 20
// volumes each move data for a simulated 8 hours asks of Temporal
// exactly what the same backup does when each move takes an hour, and
// its history and each volume's stay under the stated bounds. Progress
// lives in the data movers' heartbeats (a heartbeat every 2 s of
// simulated time here, as the real ones), which are no history events.
// TestHistoryIsBoundedByVolumesNotTime in worker/ counts the real events
// on a real server, in real time; here the clock runs the 8 hours, so a
// timer or a poll that grows the history with time fails the test.
func TestBackupHistoryIsBoundedWhateverTheMovesLast(t *testing.T) {
	const volumes = 20
	shortStatus, short := runMovingBackup(t, volumes, time.Hour)
	longStatus, long := runMovingBackup(t, volumes, 8*time.Hour)

	for _, st := range []v1alpha1.BackupStatus{shortStatus, longStatus} {
		require.Equal(t, v1alpha1.PhaseCompleted, st.Phase, st.FailureReason)
		require.Len(t, st.Operations, volumes)
		for _, op := range st.Operations {
			require.Equal(t, v1alpha1.OperationCompleted, op.Phase, op.ID)
			require.NotNil(t, op.Upload, op.ID)
		}
	}
	flowtest.AssertBoundedWhateverTheDuration(t, short, long, volumes/4*8*time.Hour, // 4 slots
		v1alpha1.BackupWorkflowName, v1alpha1.VolumeSnapshotWorkflowName, backupOf20VolumesEvents, volumeSnapshotEvents)
}
