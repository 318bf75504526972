package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestVolumeSnapshots runs backups of CSI volumes against the sandbox's
// real snapshot controller, csi-snapshotter and csi-provisioner, with the
// test driver whose snapshots are copies of directories.
func TestVolumeSnapshots(t *testing.T) {
	t.Parallel()
	s := newCSIStack(t)
	w := s.startWorker("--snapshot-keep-newest", "2")
	ctx := context.Background()

	t.Run("backup, delete the namespace, restore the claims from their snapshots", func(t *testing.T) {
		makeClaims(t, s, "vol", "data", "logs")
		dataFiles := map[string]string{"a.txt": "alpha", "dir/b.bin": strings.Repeat("b", 300_000)}
		logFiles := map[string]string{"app.log": "started\nready\n"}
		writeVolume(t, s, "vol", "data", dataFiles)
		writeVolume(t, s, "vol", "logs", logFiles)
		pendingClaim(t, s, "vol", "pending")
		foreignClaim(t, s, "vol", "foreign")

		s.backup(v1alpha1.BackupSpec{Name: "vol-1", IncludedNamespaces: []string{"vol"}})
		recordHistory(t, s, v1alpha1.VolumeWorkflowID("vol-1", v1alpha1.Volume{Namespace: "vol", Claim: "data"}), "volume_snapshot_completed.json")
		v, err := s.starter.GetBackup(ctx, "vol-1")
		require.NoError(t, err)
		st := v.Status
		require.Len(t, st.Operations, 2, "one operation per snapshotted claim: %+v", st.Operations)
		handles := []string{}
		for _, claim := range []string{"data", "logs"} {
			op := operation(t, st, "vol", claim)
			assert.Equal(t, v1alpha1.OperationCompleted, op.Phase)
			require.NotNil(t, op.Snapshot)
			assert.NotEmpty(t, op.Snapshot.Handle)
			assert.Equal(t, int64(16<<20), op.Snapshot.RestoreBytes)
			assert.NotNil(t, op.Started)
			handles = append(handles, op.Snapshot.Handle)
		}
		// The snapshots and contents, re-collected ready, are in the tarball.
		assert.Equal(t, 2, st.Resources["volumesnapshots.snapshot.storage.k8s.io"].Items)
		assert.Equal(t, 2, st.Resources["volumesnapshotcontents.snapshot.storage.k8s.io"].Items)

		var results v1alpha1.BackupResults
		require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/vol-1/results.json"), &results))
		warnings := ""
		for _, w := range results.Warnings {
			warnings += w.Message + "\n"
		}
		assert.Contains(t, warnings, "claim vol/pending is not bound")
		assert.Contains(t, warnings, "claim vol/foreign is bound to a volume of CSI driver other.csi.example.com, which has no VolumeSnapshotClass")
		var volumes v1alpha1.VolumesFile
		require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/vol-1/volumes.json"), &volumes))
		require.Len(t, volumes.Volumes, 2)
		var ops v1alpha1.OperationsFile
		require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/vol-1/operations.json"), &ops))
		require.Len(t, ops.Operations, 2)

		_, contents := backupSnapshots(t, s, "vol-1")
		require.Len(t, contents, 2)
		for _, c := range contents {
			assert.Equal(t, snapv1.VolumeSnapshotContentRetain, c.Spec.DeletionPolicy, "content %s", c.Name)
			assert.NotEmpty(t, c.Labels[v1alpha1.LabelSnapshotAlias])
			assert.NotEmpty(t, c.Labels[v1alpha1.LabelSnapshotVolume])
		}

		// Changes after the backup are not restored: the snapshot is a
		// point-in-time copy.
		writeVolume(t, s, "vol", "data", map[string]string{"a.txt": "changed after the backup"})
		deleteNamespace(t, s.cluster.Config(), "vol")
		_, contents = backupSnapshots(t, s, "vol-1")
		assert.Len(t, contents, 2, "the retained contents outlive the namespace")

		r := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "vol-1-r", BackupName: "vol-1",
			NamespaceMapping: map[string]string{"vol": "vol-r"}}}, 2*time.Minute)
		out := s.outcomes("vol-1-r")
		for _, key := range []string{"persistentvolumeclaims vol-r/data", "persistentvolumeclaims vol-r/logs"} {
			assert.Equal(t, v1alpha1.ItemRestored, out[key].Result, "%s: %+v (restore %s: %v)", key, out[key], r.Phase, failedOutcomes(out))
		}
		waitClaimBound(t, s, "vol-r", "data")
		waitClaimBound(t, s, "vol-r", "logs")
		assert.Equal(t, dataFiles, readVolume(t, s, "vol-r", "data"))
		assert.Equal(t, logFiles, readVolume(t, s, "vol-r", "logs"))
		skippedPV := 0
		for key, o := range out {
			if strings.HasPrefix(key, "persistentvolumes ") && strings.Contains(o.Reason, "restored from VolumeSnapshot") {
				skippedPV++
			}
		}
		assert.Equal(t, 2, skippedPV, "the backed-up volumes give way to new ones provisioned from the snapshots")

		// Deleting the backup deletes its snapshots, in the cluster and in
		// the driver.
		_, err = s.starter.DeleteBackup(ctx, "vol-1", false)
		require.NoError(t, err)
		waitNoSnapshots(t, s, "vol-1", handles...)
	})

	t.Run("a snapshot not ready in time is canceled and removed", func(t *testing.T) {
		require.NoError(t, s.cluster.SetCSIControl(csistate.Control{SnapshotDelay: csistate.Duration(time.Hour)}))
		defer func() { require.NoError(t, s.cluster.SetCSIControl(csistate.Control{})) }()
		makeClaims(t, s, "slow", "data")
		before := len(driverSnapshots(t, s))
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
			Name: "slow-1", IncludedNamespaces: []string{"slow"}, CSISnapshotTimeout: &metav1.Duration{Duration: 4 * time.Second}}})
		require.NoError(t, err)
		v := s.waitDone("slow-1", 2*time.Minute)
		require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "%+v", v.Status)
		op := operation(t, v.Status, "slow", "data")
		assert.Equal(t, v1alpha1.OperationFailed, op.Phase)
		assert.Contains(t, op.Error, "was not ready within csiSnapshotTimeout 4s")
		assert.Contains(t, v.Status.FailureReason, "1 of 1 volume operations failed")
		waitNoSnapshots(t, s, "slow-1")
		assert.Len(t, driverSnapshots(t, s), before, "the driver's snapshot was deleted too")

		// Canceled while waiting: the snapshot goes too.
		_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
			Name: "slow-2", IncludedNamespaces: []string{"slow"}}})
		require.NoError(t, err)
		s.waitBackup("slow-2", time.Minute, func(v *starter.BackupView) bool {
			return v.Status != nil && v.Status.Phase == v1alpha1.PhaseWaitingForOperations && len(v.Status.Operations) == 1 &&
				strings.Contains(v.Status.Operations[0].Progress, "waiting for VolumeSnapshot")
		})
		_, err = s.starter.CancelBackup(ctx, "slow-2")
		require.NoError(t, err)
		v = s.waitDone("slow-2", time.Minute)
		assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
		waitNoSnapshots(t, s, "slow-2")
		assert.Len(t, driverSnapshots(t, s), before)
	})

	t.Run("a worker killed while waiting for readiness", func(t *testing.T) {
		// The driver holds the snapshots until the test lifts the delay,
		// so the kill lands while both waits run, however slow the
		// machine.
		require.NoError(t, s.cluster.SetCSIControl(csistate.Control{SnapshotDelay: csistate.Duration(time.Hour)}))
		defer func() { require.NoError(t, s.cluster.SetCSIControl(csistate.Control{})) }()
		makeClaims(t, s, "kill", "a", "b")
		before := driverSnapshots(t, s)
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{
			BackupSpec: v1alpha1.BackupSpec{Name: "kill-1", IncludedNamespaces: []string{"kill"}},
			Options:    v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 5 * time.Second}},
		})
		require.NoError(t, err)
		waiting := s.waitBackup("kill-1", 2*time.Minute, func(v *starter.BackupView) bool {
			if v.Status == nil || len(v.Status.Operations) != 2 {
				return false
			}
			for _, op := range v.Status.Operations {
				if !strings.Contains(op.Progress, "waiting for VolumeSnapshot") {
					return false
				}
			}
			return true
		})
		for _, op := range waiting.Status.Operations {
			waitActivityStarted(t, s, v1alpha1.VolumeWorkflowID("kill-1", op.Volume), waitSnapshotActivity)
		}
		w.kill()
		w = s.startWorker("--snapshot-keep-newest", "2")
		require.NoError(t, s.cluster.SetCSIControl(csistate.Control{}))
		v := s.waitDone("kill-1", 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
		for _, op := range waiting.Status.Operations {
			assert.Greater(t, activityAttempt(t, s, v1alpha1.VolumeWorkflowID("kill-1", op.Volume), waitSnapshotActivity), int32(1),
				"the kill landed mid-wait: %s/%s's wait ran again", op.Volume.Namespace, op.Volume.Claim)
		}
		vs, contents := backupSnapshots(t, s, "kill-1")
		assert.Len(t, vs, 2, "one VolumeSnapshot per volume")
		assert.Len(t, contents, 2)
		added := 0
		for id := range driverSnapshots(t, s) {
			if !before[id] {
				added++
			}
		}
		assert.Equal(t, 2, added, "the driver cut one snapshot per volume, no duplicates")
	})

	t.Run("keep-newest 2 over four backups keeps the two newest", func(t *testing.T) {
		makeClaims(t, s, "ring", "data")
		names := []string{"ring-1", "ring-2", "ring-3", "ring-4"}
		var volume string
		for i, name := range names {
			writeVolume(t, s, "ring", "data", map[string]string{"generation": name})
			s.backup(v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{"ring"}, NativeSnapshots: v1alpha1.NativeSnapshotsKeepNewest})
			v, err := s.starter.GetBackup(ctx, name)
			require.NoError(t, err)
			op := operation(t, v.Status, "ring", "data")
			volume = op.Volume.PersistentVolume
			if i >= 2 {
				require.NotNil(t, op.Snapshot)
				assert.Len(t, op.Snapshot.Pruned, 1, "backup %s made room by pruning one older snapshot", name)
			}
		}
		list, err := snapshots(t, s).SnapshotV1().VolumeSnapshotContents().List(ctx,
			metav1.ListOptions{LabelSelector: v1alpha1.LabelSnapshotVolume + "=" + volume})
		require.NoError(t, err)
		var kept []string
		for _, c := range list.Items {
			kept = append(kept, c.Labels[v1alpha1.LabelBackup])
		}
		assert.ElementsMatch(t, []string{"ring-3", "ring-4"}, kept)
	})
}

// TestVolumeSnapshotsWithoutSnapshotAPI: a claim bound to a CSI volume in a
// cluster without the VolumeSnapshot CRDs fails the backup when its
// volumes are planned, with a reason that says what to do, and what was
// collected beside the plan is discarded; snapshotVolumes=false backs it
// up.
func TestVolumeSnapshotsWithoutSnapshotAPI(t *testing.T) {
	t.Parallel()
	// Its own cluster: it makes a PersistentVolume, which is cluster-wide.
	s := newStack(t)
	s.startWorker()
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nocrd"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	foreignClaim(t, s, "nocrd", "data")

	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "nocrd-1", IncludedNamespaces: []string{"nocrd"}}})
	require.NoError(t, err)
	v := s.waitDone("nocrd-1", time.Minute)
	require.Equal(t, v1alpha1.PhaseFailed, v.Phase)
	assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeSnapshotAPIMissing)
	assert.Contains(t, v.Status.FailureReason, "claim nocrd/data is bound to CSI volume")
	assert.Contains(t, v.Status.FailureReason, "snapshotVolumes: false")
	assert.Equal(t, []string{location.Backup("nocrd-1").Logs()}, backupObjects(t, s, "nocrd-1"),
		"nothing of the failed backup is kept but its log")

	off := false
	s.backup(v1alpha1.BackupSpec{Name: "nocrd-2", IncludedNamespaces: []string{"nocrd"}, SnapshotVolumes: &off})
}

// pendingClaim creates a claim of a class nobody provisions: never bound.
func pendingClaim(t *testing.T, s *stack, namespace, name string) {
	t.Helper()
	class := "no-such-class"
	_, err := fastClient(t, s.cluster.Config()).CoreV1().PersistentVolumeClaims(namespace).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// foreignClaim binds a claim to a pre-provisioned volume of a CSI driver
// that has no VolumeSnapshotClass.
func foreignClaim(t *testing.T, s *stack, namespace, name string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	empty := ""
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name + "-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: "",
			ClaimRef:         &corev1.ObjectReference{Namespace: namespace, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "other.csi.example.com", VolumeHandle: namespace + "-" + name}},
		},
	}
	_, err := kc.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &empty, VolumeName: pv.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitClaimBound(t, s, namespace, name)
}
