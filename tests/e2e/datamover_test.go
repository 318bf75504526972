package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
)

// TestDataMovement moves snapshot data into the location's kopia
// repository with real data mover processes, real kopia and the sandbox's
// real CSI sidecars.
func TestDataMovement(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	w := m.startMoverWorker()
	ctx := context.Background()

	t.Run("upload, incremental re-upload, byte-identical data, nothing left behind", func(t *testing.T) {
		makeClaims(t, m.stack, "dm", "data")
		want := fillVolume(t, m.stack, "dm", "data", datatree.Spec{LargeFiles: 2, LargeSize: 8 << 20, SmallFiles: 2000, SmallSize: 4096, Seed: 11})

		m.backup(v1alpha1.BackupSpec{Name: "dm-1", IncludedNamespaces: []string{"dm"}, SnapshotMoveData: true,
			NativeSnapshots: v1alpha1.NativeSnapshotsDelete})
		recordHistory(t, m.stack, v1alpha1.VolumeWorkflowID("dm-1", v1alpha1.Volume{Namespace: "dm", Claim: "data"}), "volume_data_upload_watches_start.json")
		v, err := m.starter.GetBackup(ctx, "dm-1")
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		op := operation(t, v.Status, "dm", "data")
		assert.Equal(t, v1alpha1.OperationKindDataUpload, op.Kind)
		up := uploadOf(t, v.Status, "dm", "data")
		assert.NotEmpty(t, up.SnapshotID)
		assert.Empty(t, up.ParentID, "the volume's first upload has no parent")
		assert.EqualValues(t, 2000+2+1, up.Files)
		// A data mover whose heartbeats Temporal answers too late on a loaded
		// machine is replaced, so no kill does not mean one attempt.
		assert.Positive(t, up.Attempts)
		assert.Greater(t, up.UploadedBytes, int64(16<<20), "the random data was uploaded")
		require.NotNil(t, op.Snapshot)
		assert.True(t, op.Snapshot.Deleted, "nativeSnapshots delete removes the snapshot once the data is moved")
		snaps, _ := backupSnapshots(t, m.stack, "dm-1")
		assert.Empty(t, snaps)

		var volumes v1alpha1.VolumesFile
		require.NoError(t, json.Unmarshal(readLocation(t, m.stack, "backups/dm-1/volumes.json"), &volumes))
		require.Len(t, volumes.Volumes, 1)
		require.NotNil(t, volumes.Volumes[0].Upload)
		assert.Equal(t, up.SnapshotID, volumes.Volumes[0].Upload.SnapshotID)
		assert.NotEmpty(t, logLines(t, m.stack, "dm-1", "Volume data uploaded"), "the data mover's lines are in the backup's log")

		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10), "the repository holds the volume byte for byte")
		m.assertNoDataMoverLeftovers(t)

		m.backup(v1alpha1.BackupSpec{Name: "dm-2", IncludedNamespaces: []string{"dm"}, SnapshotMoveData: true})
		v2, err := m.starter.GetBackup(ctx, "dm-2")
		require.NoError(t, err)
		up2 := uploadOf(t, v2.Status, "dm", "data")
		assert.Equal(t, up.SnapshotID, up2.ParentID, "the second backup is incremental to the first")
		assert.Less(t, up2.UploadedBytes, up.UploadedBytes/20, "unchanged data is not uploaded again")
		m.assertNoDataMoverLeftovers(t)

		// Deleting a backup deletes its kopia snapshot; the other backup's
		// stays whole.
		res, err := m.starter.DeleteBackup(ctx, "dm-1", false)
		require.NoError(t, err)
		require.NoError(t, m.starter.WaitRun(ctx, res.WorkflowID, res.RunID))
		assert.Zero(t, m.completeSnapshots(t, "dm-1"))
		assert.Equal(t, 1, m.completeSnapshots(t, "dm-2"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up2.SnapshotID), 10))

		// Maintenance runs under cairn's one identity and leaves the
		// remaining backup whole.
		run, err := m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "maintenance-test", TaskQueue: v1alpha1.TaskQueue},
			v1alpha1.RepositoryMaintenanceWorkflowName, v1alpha1.MaintenanceRequest{Location: m.location, Mode: "full"})
		require.NoError(t, err)
		var maint v1alpha1.MaintenanceResult
		require.NoError(t, run.Get(ctx, &maint))
		assert.True(t, maint.Ran)
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up2.SnapshotID), 10))
	})

	t.Run("one data mover per node at a time: three volumes wait in line, all complete", func(t *testing.T) {
		makeClaims(t, m.stack, "line", "a", "b", "c")
		for i, claim := range []string{"a", "b", "c"} {
			fillVolume(t, m.stack, "line", claim, datatree.Spec{LargeFiles: 1, LargeSize: 8 << 20, SmallFiles: 200, SmallSize: 4096, Seed: uint64(40 + i)})
		}
		req := moveRequest("line-1", "line")
		req.Options.VolumeConcurrency = 4
		_, err := m.starter.CreateBackup(ctx, req)
		require.NoError(t, err)
		// The first data mover is held (frozen) until the others show
		// their place in line, so the wait is seen however fast the
		// uploads are.
		var first []int
		until(t, func() bool { first = exposer.Running(m.stateDir); return len(first) > 0 },
			2*time.Minute, 50*time.Millisecond, "a data mover started")
		require.Len(t, first, 1, "one data mover on the node")
		require.NoError(t, syscall.Kill(first[0], syscall.SIGSTOP))
		m.waitBackup("line-1", 2*time.Minute, func(v *starter.BackupView) bool {
			if v.Status == nil {
				return false
			}
			waiting := 0
			for _, op := range v.Status.Operations {
				if strings.Contains(op.Progress, "waiting for a data mover slot on node") {
					waiting++
				}
			}
			return waiting == 2
		})
		assert.Equal(t, first, exposer.Running(m.stateDir), "the others wait while the first data mover holds the node")
		require.NoError(t, syscall.Kill(first[0], syscall.SIGCONT))
		most := 0
		for {
			most = max(most, len(exposer.Running(m.stateDir)))
			v, err := m.starter.GetBackup(ctx, "line-1")
			require.NoError(t, err)
			if v.Phase.Done() {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		v := m.waitDone("line-1", 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %+v", v.Status)
		for _, claim := range []string{"a", "b", "c"} {
			uploadOf(t, v.Status, "line", claim)
		}
		assert.Equal(t, 1, most, "never more than one data mover at a time on the node")
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("a data mover that cannot start hits the prepare timeout with the reason", func(t *testing.T) {
		makeClaims(t, m.stack, "stuck", "data")
		fillVolume(t, m.stack, "stuck", "data", datatree.Spec{SmallFiles: 10, SmallSize: 100, Seed: 31})
		require.NoError(t, m.cluster.SetCSIControl(csistate.Control{CreateVolumeError: "no capacity left on the sandbox"}))
		defer func() { require.NoError(t, m.cluster.SetCSIControl(csistate.Control{})) }()
		req := moveRequest("stuck-1", "stuck")
		req.DataMoverPrepareTimeout = &metav1.Duration{Duration: 8 * time.Second}
		op := m.failedMove(t, req, "stuck")
		assert.Contains(t, op.Error, "no data mover started within dataMoverPrepareTimeout 8s")
		assert.Contains(t, op.Error, "is Pending")
		assert.Contains(t, op.Error, "no capacity left on the sandbox", "the reason names what the provisioner said")
		snaps, _ := backupSnapshots(t, m.stack, "stuck-1")
		assert.Empty(t, snaps, "the failed operation's snapshot is removed")
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("a wrong repository password fails clearly and leaves the repository untouched", func(t *testing.T) {
		before, err := datatree.Digest(m.repositoryDir(t))
		require.NoError(t, err)
		w.stop()
		w = m.startMoverWorkerWithPassword("not the password")
		defer func() { w.stop(); w = m.startMoverWorker() }()
		makeClaims(t, m.stack, "badpw", "data")
		fillVolume(t, m.stack, "badpw", "data", datatree.Spec{SmallFiles: 10, SmallSize: 100, Seed: 32})
		reason := m.failedBackup(t, moveRequest("badpw-1", "badpw"))
		assert.Contains(t, reason, v1alpha1.ErrTypeRepositoryPassword)
		assert.Contains(t, reason, "the repository password does not open the volume data repository")
		assert.NotContains(t, reason, "not the password", "the password never appears in errors")
		assert.Equal(t, int32(1), activityAttempt(t, m.stack, v1alpha1.BackupWorkflowID("badpw-1"), ensureRepositoryActivity),
			"a wrong password is not retried")
		snaps, _ := backupSnapshots(t, m.stack, "badpw-1")
		assert.Empty(t, snaps, "the backup failed before any snapshot was taken")
		after, err := datatree.Digest(m.repositoryDir(t))
		require.NoError(t, err)
		assert.Equal(t, before, after, "the repository is untouched")
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("repository storage that fails is retried, then the backup fails with the reason", func(t *testing.T) {
		broken := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(broken, "kopia"), []byte("not a directory"), 0o600))
		makeClaims(t, m.stack, "broken", "data")
		fillVolume(t, m.stack, "broken", "data", datatree.Spec{SmallFiles: 10, SmallSize: 100, Seed: 33})
		req := moveRequest("broken-1", "broken")
		req.StorageLocation = "file://" + broken
		reason := m.failedBackup(t, req)
		assert.Contains(t, reason, "not a directory")
		assert.Equal(t, int32(5), activityAttempt(t, m.stack, v1alpha1.BackupWorkflowID("broken-1"), ensureRepositoryActivity),
			"the repository step was tried 5 times")
		m.assertNoDataMoverLeftovers(t)
	})
}

// TestSlotOfATerminatedHolderIsFreed: an operation that holds a node's
// only data mover slot and is terminated (so it never gives the slot
// back) loses it at the slots workflow's next check, on the real server,
// and the operation waiting in line gets it.
func TestSlotOfATerminatedHolderIsFreed(t *testing.T) {
	t.Parallel()
	// Only the worker's workflows and Temporal take part: no CSI stack.
	m := newSharedStack(t)
	m.startWorker()
	ctx := context.Background()
	// The holder: any workflow, terminated. The slots workflow of another
	// node will do.
	holder := "e2e-slot-holder"
	_, err := m.temporalC.SignalWithStartWorkflow(ctx, holder, v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: "nobody"},
		client.StartWorkflowOptions{ID: holder, TaskQueue: v1alpha1.TaskQueue}, v1alpha1.DataMoverSlotsWorkflowName,
		v1alpha1.SlotsState{Node: "elsewhere", Limit: 1})
	require.NoError(t, err)
	require.NoError(t, m.temporalC.TerminateWorkflow(ctx, holder, "", "the e2e test stands in for a terminated operation"))

	slotsID := v1alpha1.DataMoverSlotsWorkflowID("e2e-node")
	for _, id := range []string{holder, "e2e-slot-waiter"} {
		_, err := m.temporalC.SignalWithStartWorkflow(ctx, slotsID, v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: id, Limit: 1},
			client.StartWorkflowOptions{ID: slotsID, TaskQueue: v1alpha1.TaskQueue}, v1alpha1.DataMoverSlotsWorkflowName,
			v1alpha1.SlotsState{Node: "e2e-node", Limit: 1, HolderCheck: 2 * time.Second})
		require.NoError(t, err)
	}
	defer func() { _ = m.temporalC.TerminateWorkflow(ctx, slotsID, "", "e2e test done") }()
	// A query can time out on a loaded machine; only the answer counts.
	// The deadline guards against a hang: the check runs every 2 s of
	// the server's timers (the state's HolderCheck).
	deadline := time.Now().Add(10 * time.Minute)
	holders := func() []string {
		for {
			v, err := m.temporalC.QueryWorkflow(ctx, slotsID, "", v1alpha1.QuerySlots)
			var st v1alpha1.SlotsState
			if err == nil {
				err = v.Get(&st)
			}
			if err == nil {
				var ids []string
				for _, h := range st.Holders {
					ids = append(ids, h.WorkflowID)
				}
				return ids
			}
			require.True(t, time.Now().Before(deadline), "the slots workflow does not answer: %v", err)
			t.Logf("querying the slots workflow: %v; again", err)
			time.Sleep(time.Second)
		}
	}
	for {
		got := holders()
		if len(got) == 1 && got[0] == "e2e-slot-waiter" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the terminated holder kept the slot: holders %v", got)
		time.Sleep(time.Second)
	}
	// The holder signalled first and took the only slot; the waiter got
	// it because the check found the holder closed.
	checked := false
	for _, ev := range runHistory(t, m, slotsID) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "ClosedSlotHolders" {
			checked = true
		}
	}
	assert.True(t, checked, "the slots workflow checked its holders")
}

// TestDataMoverDurability kills data movers and workers mid-upload, the
// worker while it exposes a volume, and cancels an upload.
func TestDataMoverDurability(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	w := m.startMoverWorker(throttled...)
	ctx := context.Background()

	t.Run("SIGKILL of the data mover mid-upload: a new one resumes from the checkpoint", func(t *testing.T) {
		want, total := m.startMediumMove(t, "kill-dm", 21)
		at := waitUploaded(t, m.stack, "kill-dm-1", "kill-dm", "data", total/2)
		m.freezeAtCheckpoint(t, "kill-dm-1", total*3/5)
		live, err := m.starter.GetBackup(ctx, "kill-dm-1")
		require.NoError(t, err)
		assert.Contains(t, operation(t, live.Status, "kill-dm", "data").Progress, "uploading: ",
			"describe shows the progress of the data mover's heartbeat")
		m.killDataMover(t)

		v := m.waitDone("kill-dm-1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		up := uploadOf(t, v.Status, "kill-dm", "data")
		if !assert.Equal(t, 2, up.Attempts, "a second data mover finished the upload") {
			logActivityFailures(t, m.stack, "kill-dm-1", v1alpha1.Volume{Namespace: "kill-dm", Claim: "data"})
		}
		assert.Less(t, up.UploadedBytes, total/2, "the retry uploaded less than half of the data again (killed at %d of %d bytes)", at.UploadedBytes, total)
		assert.Equal(t, 1, m.completeSnapshots(t, "kill-dm-1"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("SIGKILL of the worker while a data mover uploads: no second upload", func(t *testing.T) {
		makeClaims(t, m.stack, "kill-w", "data")
		want := fillVolume(t, m.stack, "kill-w", "data", mediumData(22))
		_, err := m.starter.CreateBackup(ctx, moveRequest("kill-w-1", "kill-w"))
		require.NoError(t, err)
		waitUploaded(t, m.stack, "kill-w-1", "kill-w", "data", 80<<20)
		w.kill()
		killedAt := time.Now()
		w = m.startMoverWorker(throttled...)

		v := m.waitDone("kill-w-1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		up := uploadOf(t, v.Status, "kill-w", "data")
		if !assert.Equal(t, 1, up.Attempts, "the data mover outlived the worker and finished") {
			logActivityFailures(t, m.stack, "kill-w-1", v1alpha1.Volume{Namespace: "kill-w", Claim: "data"})
		}
		volumeID := v1alpha1.VolumeWorkflowID("kill-w-1", v1alpha1.Volume{Namespace: "kill-w", Claim: "data"})
		assert.True(t, activityCompletedAt(t, m.stack, volumeID, uploadVolumeActivity).After(killedAt),
			"the kill landed mid-upload: the upload completed after it")
		assert.Equal(t, 1, m.completeSnapshots(t, "kill-w-1"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("SIGKILL of the worker while it exposes the volume: the next exposes it, once", func(t *testing.T) {
		makeClaims(t, m.stack, "kill-x", "data")
		want := fillVolume(t, m.stack, "kill-x", "data", datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 20, SmallSize: 4096, Seed: 25})
		var name string
		catchInNewRun(t, m.stack, w, exposeVolumeActivity, func(try int) string {
			name = fmt.Sprintf("kill-x-%d", try)
			_, err := m.starter.CreateBackup(ctx, moveRequest(name, "kill-x"))
			require.NoError(t, err)
			return v1alpha1.VolumeWorkflowID(name, v1alpha1.Volume{Namespace: "kill-x", Claim: "data"})
		})
		w.kill()
		w = m.startMoverWorker(throttled...)

		v := m.waitDone(name, 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		volumeID := v1alpha1.VolumeWorkflowID(name, v1alpha1.Volume{Namespace: "kill-x", Claim: "data"})
		assert.Greater(t, activityAttempt(t, m.stack, volumeID, exposeVolumeActivity), int32(1),
			"the kill landed mid-step: ExposeVolume ran again")
		up := uploadOf(t, v.Status, "kill-x", "data")
		assert.Equal(t, 1, up.Attempts, "one data mover uploaded the exposed volume")
		assert.Equal(t, 1, m.completeSnapshots(t, name))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("Temporal killed while a data mover uploads: the data ends byte-identical", func(t *testing.T) {
		want, total := m.startMediumMove(t, "kill-t", 24)
		at := waitUploaded(t, m.stack, "kill-t-1", "kill-t", "data", 80<<20)
		killedAt := m.killTemporalMidTransfer(t)

		v := m.waitDone("kill-t-1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		require.Less(t, at.UploadedBytes, total, "the kill came mid-upload")
		volumeID := v1alpha1.VolumeWorkflowID("kill-t-1", v1alpha1.Volume{Namespace: "kill-t", Claim: "data"})
		assert.True(t, activityCompletedAt(t, m.stack, volumeID, uploadVolumeActivity).After(killedAt),
			"the kill landed mid-upload: the upload completed after it")
		up := uploadOf(t, v.Status, "kill-t", "data")
		assert.Equal(t, 1, m.completeSnapshots(t, "kill-t-1"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("cancel during upload: Canceled, nothing left behind", func(t *testing.T) {
		makeClaims(t, m.stack, "cancel-dm", "data")
		fillVolume(t, m.stack, "cancel-dm", "data", mediumData(23))
		_, err := m.starter.CreateBackup(ctx, moveRequest("cancel-dm-1", "cancel-dm"))
		require.NoError(t, err)
		waitUploaded(t, m.stack, "cancel-dm-1", "cancel-dm", "data", 80<<20)
		thaw := m.freezeDataMover(t) // the upload cannot end before the cancel reaches it
		_, err = m.starter.CancelBackup(ctx, "cancel-dm-1")
		require.NoError(t, err)
		waitForEvent(t, m.stack, v1alpha1.VolumeWorkflowID("cancel-dm-1", v1alpha1.Volume{Namespace: "cancel-dm", Claim: "data"}), enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED)
		thaw()
		v := m.waitDone("cancel-dm-1", 2*time.Minute)
		assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
		assert.Zero(t, m.completeSnapshots(t, "cancel-dm-1"), "a canceled upload saves no snapshot")
		snaps, _ := backupSnapshots(t, m.stack, "cancel-dm-1")
		assert.Empty(t, snaps, "the canceled backup's native snapshot is removed")
		m.assertNoDataMoverLeftovers(t)
	})
}

func mustVolumePath(t *testing.T, s *stack, namespace, claim string) string {
	t.Helper()
	dir, err := s.cluster.VolumePath(context.Background(), namespace, claim)
	require.NoError(t, err)
	return dir
}

// startMediumMove fills claim data of namespace ns with a medium data
// set and starts backup <ns>-1 moving it; it returns the data's digest
// and size.
func (m *moverStack) startMediumMove(t *testing.T, ns string, seed uint64) (map[string]string, int64) {
	t.Helper()
	makeClaims(t, m.stack, ns, "data")
	want := fillVolume(t, m.stack, ns, "data", mediumData(seed))
	total, err := datatree.Bytes(mustVolumePath(t, m.stack, ns, "data"))
	require.NoError(t, err)
	_, err = m.starter.CreateBackup(context.Background(), moveRequest(ns+"-1", ns))
	require.NoError(t, err)
	return want, total
}
