package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/devserver/devservertest"
	"github.com/cairn-backup/cairn/workflows"
)

// boundVolumes is how many volumes the history bound is shown for.
const boundVolumes = 20

// hangGuard ends a run that cannot finish (a fake missing) instead of
// letting the test hang; a run takes seconds.
const hangGuard = 5 * time.Minute

// The bound this test states, however long the data moves: a backup's
// own history holds at most historyFixed events plus backupPerVolume per
// volume, a restore's historyFixed plus restorePerVolume, and each
// volume's workflow at most volumeEvents. A volume adds its child's start
// and end and, on the way, its progress signals (a backup's: snapshot
// created, snapshot ready, exposing, data mover started, data moved; a
// restore's: exposing, data mover started, data written), each with the
// workflow task that reads it at worst: how many share a task depends on
// timing.
const (
	historyFixed     = 60
	backupPerVolume  = 6 + 5*4
	restorePerVolume = 6 + 3*4
	volumeEvents     = 100
)

// TestHistoryIsBoundedByVolumesNotTime: a backup and a restore of 20
// volumes whose data movers report their progress a few times, and ones
// whose data movers report it as often as in 8 hours (every 10 s), all
// stay under the stated bound, which does not depend on how long the data
// moves: data movers report in their heartbeats, which add no events.
// (Before, each report was a signal to the backup or restore: 2,880 per
// volume here, past Temporal's limit of 51,200 events per history.)
func TestHistoryIsBoundedByVolumesNotTime(t *testing.T) {
	tc := devservertest.Start(t)
	h := &historyHarness{t: t, tc: tc}
	h.startWorker()
	const eightHours = 8 * 60 * 60 / 10

	t.Run("backup", func(t *testing.T) {
		short, long := h.backup("short", 6), h.backup("long", eightHours)
		t.Logf("events: backup %d, volumes %v (6 reports each); backup %d, volumes %v (%d reports each)",
			short.parent, short.volumes, long.parent, long.volumes, eightHours)
		for _, c := range []historyCounts{short, long} {
			assert.LessOrEqual(t, c.parent, historyFixed+backupPerVolume*boundVolumes, "the backup's history")
			assertVolumesBounded(t, c.volumes)
		}
	})
	t.Run("restore", func(t *testing.T) {
		short, long := h.restore("short-r", 6), h.restore("long-r", eightHours)
		t.Logf("events: restore %d, volumes %v (6 reports each); restore %d, volumes %v (%d reports each)",
			short.parent, short.volumes, long.parent, long.volumes, eightHours)
		for _, c := range []historyCounts{short, long} {
			assert.LessOrEqual(t, c.parent, historyFixed+restorePerVolume*boundVolumes, "the restore's history")
			assertVolumesBounded(t, c.volumes)
		}
	})
}

func assertVolumesBounded(t *testing.T, counts []int) {
	t.Helper()
	for _, n := range counts {
		assert.LessOrEqual(t, n, volumeEvents, "a volume's history")
	}
}

// historyHarness runs the real backup and volume workflows on a real
// Temporal server, with fake activities under the real names and one fake
// data mover per volume on the volume's own task queue.
type historyHarness struct {
	t       *testing.T
	tc      client.Client
	reports int // progress reports each data mover makes
	mu      sync.Mutex
	movers  []sdkworker.Worker
}

type historyCounts struct {
	parent  int
	volumes []int
}

func fake(r sdkworker.ActivityRegistry, real, fn any) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: workflows.ActivityName(real)})
}

func (h *historyHarness) startWorker() {
	w := sdkworker.New(h.tc, v1alpha1.TaskQueue, sdkworker.Options{})
	RegisterWorkflows(w)
	var (
		cl *cluster.Activities
		st *store.Activities
		cs *csi.Activities
		ex *expose.Activities
		rs *restore.Activities
		rp *repository.Activities
		hk *hooks.Activities
	)
	fake(w, cl.PlanBackup, func(context.Context, v1alpha1.PlanInput) (*v1alpha1.PlanResult, error) {
		return &v1alpha1.PlanResult{}, nil
	})
	fake(w, cs.PlanVolumes, func(context.Context, v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
		res := &v1alpha1.PlanVolumesResult{}
		for i := range boundVolumes {
			res.Volumes = append(res.Volumes, v1alpha1.Volume{Namespace: "app", Claim: fmt.Sprintf("data-%d", i),
				PersistentVolume: fmt.Sprintf("pv-%d", i), Driver: "d", VolumeHandle: fmt.Sprintf("h%d", i), SnapshotClass: "c"})
		}
		return res, nil
	})
	fake(w, hk.PlanBackupHooks, func(context.Context, v1alpha1.PlanHooksInput) (*v1alpha1.PlanHooksResult, error) {
		return &v1alpha1.PlanHooksResult{}, nil
	})
	fake(w, cs.CreateVolumeSnapshot, func(_ context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
		return &v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName(in.Backup, in.Volume)}, nil
	})
	fake(w, cs.WaitVolumeSnapshot, func(_ context.Context, in v1alpha1.WaitSnapshotInput) (*v1alpha1.SnapshotInfo, error) {
		return &v1alpha1.SnapshotInfo{Name: in.Name, Content: "content", Handle: "snap", RestoreBytes: 1 << 30}, nil
	})
	fake(w, cs.RemoveVolumeSnapshot, func(context.Context, v1alpha1.RemoveSnapshotInput) error { return nil })
	fake(w, cs.CollectVolumeSnapshots, func(context.Context, v1alpha1.CollectSnapshotsInput) (*v1alpha1.CollectSnapshotsResult, error) {
		return &v1alpha1.CollectSnapshotsResult{}, nil
	})
	fake(w, rp.EnsureRepository, func(context.Context, v1alpha1.EnsureRepositoryInput) error { return nil })
	fake(w, ex.PlaceDataMover, func(context.Context, v1alpha1.ExposeInput) (*v1alpha1.Placement, error) {
		return &v1alpha1.Placement{Node: "n1", Limit: boundVolumes}, nil
	})
	fake(w, ex.RequestDataMoverSlot, func(ctx context.Context, in v1alpha1.SlotAsk) error {
		return h.tc.SignalWorkflow(ctx, in.Request.WorkflowID, "", v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: in.Node})
	})
	fake(w, ex.ExposeVolume, func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
		h.startMover(in.TaskQueue)
		return &v1alpha1.ExposeResult{DataMover: "fake", Node: "n1"}, nil
	})
	fake(w, ex.WatchDataMoverStart, func(context.Context, v1alpha1.ExposeInput) (*v1alpha1.StartWatchResult, error) {
		return &v1alpha1.StartWatchResult{Running: true}, nil
	})
	fake(w, ex.CleanupExposure, func(context.Context, v1alpha1.ExposeInput) error { return nil })
	fake(w, st.FinalizeBackup, func(context.Context, v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
		return &v1alpha1.FinalizeResult{}, nil
	})
	fake(w, st.CleanupBackupWork, func(context.Context, v1alpha1.CleanupInput) error { return nil })
	fake(w, rs.PlanRestore, func(context.Context, v1alpha1.RestorePlanInput) (*v1alpha1.RestorePlanResult, error) {
		plan := &v1alpha1.RestorePlanResult{BackupFormat: v1alpha1.BackupFormatCairn, ItemsTotal: boundVolumes,
			Types: []v1alpha1.RestoreType{{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true},
				Items: boundVolumes, Batches: 1}}}
		for i := range boundVolumes {
			claim := fmt.Sprintf("data-%d", i)
			plan.Volumes = append(plan.Volumes, v1alpha1.RestoreVolume{ID: v1alpha1.VolumeRestoreID("app", claim), Namespace: "app",
				Claim: claim, SnapshotID: "k-" + claim, StorageClass: "fast", AccessModes: []string{"ReadWriteOnce"}, SizeBytes: 1 << 30})
		}
		return plan, nil
	})
	fake(w, rs.ApplyResources, func(_ context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
		res := &v1alpha1.ApplyResult{}
		for _, t := range in.Types {
			res.Types = append(res.Types, v1alpha1.TypeApplied{Resource: t.GroupResource(), Outcome: v1alpha1.TypeOutcome{Restored: len(in.ClaimVolumes)}})
		}
		return res, nil
	})
	step := func(context.Context, v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
		return &v1alpha1.StepResult{}, nil
	}
	fake(w, rs.WaitCRDsEstablished, step)
	fake(w, rs.RelinkOwners, step)
	fake(w, rs.FinalizeRestore, func(context.Context, v1alpha1.FinalizeRestoreInput) (*v1alpha1.FinalizeRestoreResult, error) {
		return &v1alpha1.FinalizeRestoreResult{}, nil
	})
	fake(w, rs.CleanupRestoreWork, func(context.Context, v1alpha1.RestoreStepInput) error { return nil })
	fake(w, hk.RunRestoreHooks, func(context.Context, v1alpha1.RestoreHooksInput) (*v1alpha1.RestoreHooksResult, error) {
		return &v1alpha1.RestoreHooksResult{}, nil
	})
	fake(w, ex.HandOverVolume, func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.HandOverResult, error) {
		return &v1alpha1.HandOverResult{PersistentVolume: "pv-" + in.Volume.Claim}, nil
	})
	fake(w, ex.FinishVolumeRestores, func(_ context.Context, in v1alpha1.FinishVolumeRestoresInput) (*v1alpha1.FinishVolumeRestoresResult, error) {
		return &v1alpha1.FinishVolumeRestoresResult{}, nil
	})
	require.NoError(h.t, w.Start())
	h.t.Cleanup(w.Stop)
}

// startMover starts a data mover on queue whose upload heartbeats its
// progress h.reports times, as a real one does every few seconds.
func (h *historyHarness) startMover(queue string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	reports := h.reports
	m := sdkworker.New(h.tc, queue, sdkworker.Options{})
	var dm *datamover.Activities
	fake(m, dm.UploadVolume, func(ctx context.Context, in v1alpha1.UploadVolumeInput) (*v1alpha1.DataUploadInfo, error) {
		for i := range reports {
			activity.RecordHeartbeat(ctx, v1alpha1.MoverProgress{Progress: fmt.Sprintf("uploading: report %d of %d", i+1, reports)})
		}
		return &v1alpha1.DataUploadInfo{SnapshotID: "k-" + in.Volume.Claim, Bytes: 1 << 30}, nil
	})
	fake(m, dm.RestoreVolumeData, func(ctx context.Context, in v1alpha1.RestoreVolumeDataInput) (*v1alpha1.DataDownloadInfo, error) {
		for i := range reports {
			activity.RecordHeartbeat(ctx, v1alpha1.MoverProgress{Progress: fmt.Sprintf("restoring: report %d of %d", i+1, reports)})
		}
		return &v1alpha1.DataDownloadInfo{Bytes: 1 << 30}, nil
	})
	require.NoError(h.t, m.Start())
	h.movers = append(h.movers, m)
	h.t.Cleanup(m.Stop)
}

// backup runs one data-moving backup to its end and counts the events of
// its history and of each volume's.
func (h *historyHarness) backup(name string, reports int) historyCounts {
	spec := v1alpha1.BackupSpec{Name: name, SnapshotMoveData: true}.WithDefaults("file://" + h.t.TempDir())
	var status v1alpha1.BackupStatus
	id := h.runToEnd(v1alpha1.BackupWorkflowID(name), v1alpha1.BackupWorkflowName, v1alpha1.BackupRequest{Spec: spec}, reports, &status)
	require.Equal(h.t, v1alpha1.PhaseCompleted, status.Phase, "reason: %s", status.FailureReason)
	require.Len(h.t, status.Operations, boundVolumes)
	counts := historyCounts{parent: h.events(id)}
	for _, op := range status.Operations {
		require.Equal(h.t, v1alpha1.OperationCompleted, op.Phase)
		counts.volumes = append(counts.volumes, h.events(op.WorkflowID))
	}
	return counts
}

// restore runs one restore of 20 volumes from the repository to its end
// and counts the events of its history and of each volume's.
func (h *historyHarness) restore(name string, reports int) historyCounts {
	spec := v1alpha1.RestoreSpec{Name: name, BackupName: "long"}.WithDefaults("file://" + h.t.TempDir())
	var status v1alpha1.RestoreStatus
	id := h.runToEnd(v1alpha1.RestoreWorkflowID(name), v1alpha1.RestoreWorkflowName, v1alpha1.RestoreRequest{Spec: spec}, reports, &status)
	require.Equal(h.t, v1alpha1.PhaseCompleted, status.Phase, "reason: %s", status.FailureReason)
	require.Len(h.t, status.Volumes, boundVolumes)
	counts := historyCounts{parent: h.events(id)}
	for _, v := range status.Volumes {
		require.Equal(h.t, v1alpha1.OperationCompleted, v.Phase, "volume %s: %s", v.Key(), v.Error)
		counts.volumes = append(counts.volumes, h.events(v.WorkflowID))
	}
	return counts
}

// runToEnd runs a workflow whose data movers report reports times, and
// decodes its result into status.
func (h *historyHarness) runToEnd(id, workflowName string, req any, reports int, status any) string {
	h.mu.Lock()
	h.reports = reports
	h.mu.Unlock()
	ctx := context.Background()
	run, err := h.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: v1alpha1.TaskQueue, WorkflowExecutionTimeout: hangGuard},
		workflowName, req)
	require.NoError(h.t, err)
	require.NoError(h.t, run.Get(ctx, status))
	return run.GetID()
}

func (h *historyHarness) events(workflowID string) int {
	it := h.tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(h.t, err)
		n++
	}
	return n
}
