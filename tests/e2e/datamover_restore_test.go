package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/starter"
)

// TestRestoreFromMovedData restores claims whose data a backup moved
// into the repository, with no native snapshot left: real data mover
// processes write the data into new volumes, which the restored claims
// bind.
func TestRestoreFromMovedData(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	m.startMoverWorker()
	ctx := context.Background()

	makeClaims(t, m.stack, "rs", "data")
	want := fillVolume(t, m.stack, "rs", "data", datatree.Spec{LargeFiles: 2, LargeSize: 4 << 20, SmallFiles: 500, SmallSize: 4096, Seed: 12})
	m.backup(v1alpha1.BackupSpec{Name: "rs-1", IncludedNamespaces: []string{"rs"}, SnapshotMoveData: true,
		NativeSnapshots: v1alpha1.NativeSnapshotsDelete})
	original := claimVolume(t, m.stack, "rs", "data")
	deleteNamespace(t, m.cluster.Config(), "rs")

	t.Run("namespace deleted, restored: byte-identical, bound, reclaim policy given back", func(t *testing.T) {
		v := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rs-r1", BackupName: "rs-1"}}, 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		recordHistory(t, m.stack, v1alpha1.VolumeRestoreWorkflowID("rs-r1", "rs", "data"), "volume_restore_completed.json")
		recordLatest(t, m.stack, v1alpha1.DataMoverSlotsWorkflowName, "datamover_slots.json")
		vol := restoredVolume(t, v.Status, "rs", "data")
		assert.NotEqual(t, original.Name, vol.PersistentVolume, "a new volume")
		require.NotNil(t, vol.Download)
		assert.EqualValues(t, 500+2+1, vol.Download.Files)
		// A data mover whose heartbeats Temporal answers too late on a loaded
		// machine is replaced, so no kill does not mean one attempt.
		assert.Positive(t, vol.Download.Attempts)

		pv := claimVolume(t, m.stack, "rs", "data")
		assert.Equal(t, vol.PersistentVolume, pv.Name, "the claim is bound to the restored volume")
		assert.Equal(t, corev1.PersistentVolumeReclaimDelete, pv.Spec.PersistentVolumeReclaimPolicy, "the class's policy is given back")
		assert.NotContains(t, pv.Annotations, v1alpha1.AnnotationReclaimPolicy)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "rs", "data"), 10), "the restored volume holds the backed-up data")

		out := m.outcomes("rs-r1")
		assert.Equal(t, v1alpha1.ItemRestored, out["persistentvolumeclaims rs/data"].Result)
		assert.Contains(t, out["persistentvolumes /"+original.Name].Reason, "was moved into the repository: the claim gets a new volume",
			"the backed-up volume gives way to the restored one")
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("into a mapped namespace, next to the first restore", func(t *testing.T) {
		v := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rs-r2", BackupName: "rs-1",
			NamespaceMapping: map[string]string{"rs": "rs-copy"}}}, 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		vol := restoredVolume(t, v.Status, "rs-copy", "data")
		assert.Equal(t, "rs", vol.SourceNamespace)
		assert.Equal(t, vol.PersistentVolume, claimVolume(t, m.stack, "rs-copy", "data").Name)
		assert.NotEqual(t, claimVolume(t, m.stack, "rs", "data").Name, vol.PersistentVolume)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "rs-copy", "data"), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("a claim that exists keeps its volume, with a warning", func(t *testing.T) {
		before := claimVolume(t, m.stack, "rs", "data").Name
		writeVolume(t, m.stack, "rs", "data", map[string]string{"changed-after-restore": "x"})
		v := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rs-r3", BackupName: "rs-1"}}, 3*time.Minute)
		require.True(t, v.Phase == v1alpha1.PhaseCompleted, "phase %s, reason: %s", v.Phase, v.Status.FailureReason)
		assert.Empty(t, v.Status.Volumes, "no data is written over an existing claim's")
		assert.Equal(t, before, claimVolume(t, m.stack, "rs", "data").Name)
		assert.Equal(t, "x", readVolume(t, m.stack, "rs", "data")["changed-after-restore"])
		res, err := m.starter.RestoreResults(ctx, "rs-r3")
		require.NoError(t, err)
		assert.True(t, containsWith(res.Warnings, "claim rs/data exists in the cluster"), "warnings: %v", res.Warnings)
		m.assertNoDataMoverLeftovers(t)
	})
}

// TestVolumeRestoreDurability kills the data mover, the worker and
// Temporal while a restore writes a volume's data.
func TestVolumeRestoreDurability(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	env := append([]string{"CAIRN_DOWNLOAD_BYTES_PER_SECOND=10000000"}, throttled...)
	w := m.startMoverWorker(env...)
	ctx := context.Background()

	makeClaims(t, m.stack, "krs", "data")
	want := fillVolume(t, m.stack, "krs", "data", mediumData(24))
	total, err := datatree.Bytes(mustVolumePath(t, m.stack, "krs", "data"))
	require.NoError(t, err)
	req := moveRequest("krs-1", "krs")
	req.NativeSnapshots = v1alpha1.NativeSnapshotsDelete
	_, err = m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	b := m.waitDone("krs-1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, b.Phase, "reason: %s", b.Status.FailureReason)
	deleteNamespace(t, m.cluster.Config(), "krs")

	restoreReq := func(name, target string) starter.CreateRestoreRequest {
		return starter.CreateRestoreRequest{
			RestoreSpec: v1alpha1.RestoreSpec{Name: name, BackupName: "krs-1", NamespaceMapping: map[string]string{"krs": target}},
			Options:     v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}},
		}
	}

	t.Run("SIGKILL of the data mover mid-restore: a new one carries on", func(t *testing.T) {
		_, err := m.starter.CreateRestore(ctx, restoreReq("krs-r1", "krs-a"))
		require.NoError(t, err)
		at := waitRestored(t, m.stack, "krs-r1", "krs-a", "data", total*2/5)
		m.killDataMover(t)

		v := m.waitRestore("krs-r1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		vol := restoredVolume(t, v.Status, "krs-a", "data")
		require.NotNil(t, vol.Download)
		assert.Equal(t, 2, vol.Download.Attempts, "a second data mover finished the restore")
		assert.Greater(t, vol.Download.SkippedBytes, int64(0), "the second data mover skipped what the first wrote (killed at %d of %d bytes)",
			at.RestoredBytes, total)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "krs-a", "data"), 10), "byte-identical after the kill")
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("SIGKILL of the worker mid-restore: the data mover finishes, the restore completes", func(t *testing.T) {
		_, err := m.starter.CreateRestore(ctx, restoreReq("krs-r2", "krs-b"))
		require.NoError(t, err)
		waitRestored(t, m.stack, "krs-r2", "krs-b", "data", total*2/5)
		w.kill()
		killedAt := time.Now()
		w = m.startMoverWorker(env...)

		v := m.waitRestore("krs-r2", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		vol := restoredVolume(t, v.Status, "krs-b", "data")
		require.NotNil(t, vol.Download)
		assert.Equal(t, 1, vol.Download.Attempts, "the data mover outlived the worker")
		assert.True(t, activityCompletedAt(t, m.stack, v1alpha1.VolumeRestoreWorkflowID("krs-r2", "krs-b", "data"), restoreVolumeDataActivity).After(killedAt),
			"the kill landed mid-restore: the data mover's restore completed after it")
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "krs-b", "data"), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("Temporal killed mid-restore: the data mover's restore completes after it", func(t *testing.T) {
		_, err := m.starter.CreateRestore(ctx, restoreReq("krs-r4", "krs-d"))
		require.NoError(t, err)
		at := waitRestored(t, m.stack, "krs-r4", "krs-d", "data", total*2/5)
		killedAt := m.killTemporalMidTransfer(t)

		v := m.waitRestore("krs-r4", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		require.Less(t, at.RestoredBytes, total, "the kill came mid-restore")
		assert.True(t, activityCompletedAt(t, m.stack, v1alpha1.VolumeRestoreWorkflowID("krs-r4", "krs-d", "data"), restoreVolumeDataActivity).After(killedAt),
			"the kill landed mid-restore: the data mover's restore completed after it")
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "krs-d", "data"), 10))
		m.assertNoDataMoverLeftovers(t)
	})

	t.Run("cancel mid-restore: Canceled, no volume or claim left", func(t *testing.T) {
		_, err := m.starter.CreateRestore(ctx, restoreReq("krs-r3", "krs-c"))
		require.NoError(t, err)
		waitRestored(t, m.stack, "krs-r3", "krs-c", "data", total/5)
		thaw := m.freezeDataMover(t) // the restore cannot end before the cancel reaches it
		_, err = m.starter.CancelRestore(ctx, "krs-r3")
		require.NoError(t, err)
		waitForEvent(t, m.stack, v1alpha1.VolumeRestoreWorkflowID("krs-r3", "krs-c", "data"), enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED)
		thaw()
		v := m.waitRestore("krs-r3", 2*time.Minute)
		assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
		vol := restoredVolume(t, v.Status, "krs-c", "data")
		assert.Equal(t, v1alpha1.OperationCanceled, vol.Phase)
		m.assertNoDataMoverLeftovers(t)
		assertNoHandOverLeftovers(t, m)
	})
}

// restoredVolume is a restore's volume status of a target claim.
func restoredVolume(t *testing.T, st *v1alpha1.RestoreStatus, namespace, claim string) v1alpha1.VolumeRestoreStatus {
	t.Helper()
	require.NotNil(t, st)
	for _, v := range st.Volumes {
		if v.Namespace == namespace && v.Claim == claim {
			return v
		}
	}
	require.Failf(t, "no volume restored", "%s/%s not in %+v", namespace, claim, st.Volumes)
	return v1alpha1.VolumeRestoreStatus{}
}

// claimVolume is the volume a claim is bound to, once it is.
func claimVolume(t *testing.T, s *stack, namespace, claim string) *corev1.PersistentVolume {
	t.Helper()
	waitClaimBound(t, s, namespace, claim)
	kc := fastClient(t, s.cluster.Config())
	c, err := kc.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), claim, metav1.GetOptions{})
	require.NoError(t, err)
	pv, err := kc.CoreV1().PersistentVolumes().Get(context.Background(), c.Spec.VolumeName, metav1.GetOptions{})
	require.NoError(t, err)
	return pv
}

func digestVolume(t *testing.T, s *stack, namespace, claim string) map[string]string {
	t.Helper()
	d, err := datatree.Digest(mustVolumePath(t, s, namespace, claim))
	require.NoError(t, err)
	return d
}

func containsWith(list []string, part string) bool {
	for _, s := range list {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// waitRestored waits until the volume's data mover has written more than
// bytes, from its heartbeats.
func waitRestored(t *testing.T, s *stack, restore, namespace, claim string, bytes int64) kopiarepo.RestoreProgress {
	t.Helper()
	id := v1alpha1.VolumeRestoreWorkflowID(restore, namespace, claim)
	deadline := time.Now().Add(2 * time.Minute)
	var p kopiarepo.RestoreProgress
	for {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), id, "")
		if err == nil {
			for _, pa := range desc.GetPendingActivities() {
				if pa.GetActivityType().GetName() == restoreVolumeDataActivity && pa.GetHeartbeatDetails() != nil &&
					converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil && p.RestoredBytes > bytes {
					return p
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "restore of %s/%s never passed %d bytes (last %+v)", namespace, claim, bytes, p)
		time.Sleep(100 * time.Millisecond)
	}
}

// assertNoHandOverLeftovers checks that no volume waits, pre-bound or
// Retain, for a claim that will not come.
func assertNoHandOverLeftovers(t *testing.T, m *moverStack) {
	t.Helper()
	kc := fastClient(t, m.cluster.Config())
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		l, err := kc.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, pv := range l.Items {
			if pv.Annotations[v1alpha1.AnnotationReclaimPolicy] != "" || pv.Status.Phase == corev1.VolumeAvailable {
				left = append(left, pv.Name)
			}
		}
		if len(left) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "volumes left waiting: %v", left)
		time.Sleep(300 * time.Millisecond)
	}
}
