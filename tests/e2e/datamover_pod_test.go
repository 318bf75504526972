package e2e

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/worker"
)

// TestDataMoverPodsOnTheNode runs the production data mover path on the
// sandbox's node: a backup's data mover is a pod of cairn's image that
// mounts the snapshot's clone read-only, a restore's one writes the new
// volume, the data comes back byte-identical, and no pod, claim or clone
// is left; a data mover pod killed mid-upload or mid-restore is replaced
// by one that carries on. On the same node (one stack for both, as the
// node is the slowest part to start), file-system backups' data movers
// copy pods' volumes (fileSystemBackupOnTheNode).
func TestDataMoverPodsOnTheNode(t *testing.T) {
	t.Parallel()
	s := newNodeStack(t)
	snapshotDataMovers(t, s)
	fileSystemBackupOnTheNode(t, s)
}

// snapshotDataMovers moves snapshots' data with data mover pods.
func snapshotDataMovers(t *testing.T, s *stack) {
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	ns := worker.DefaultDataMoverNamespace
	dataMoverNamespace(t, kc)
	// They run as root: the restore writes into a new volume only root
	// may write (the image's own user is not root).
	podWorker := func(image string) *proc {
		return s.startPodMoverWorker(image, "--datamover-run-as-user", "0",
			"--datamover-upload-bytes-per-second", "10000000", "--datamover-download-bytes-per-second", "10000000")
	}
	w := podWorker(sandbox.CairnImage)

	makeClaims(t, s, "podmv", "data")
	fillVolume(t, s, "podmv", "data", datatree.Spec{LargeFiles: 4, LargeSize: 1 << 20, SmallFiles: 50, SmallSize: 4096, Seed: 31})
	// A file only its owner may read: root data movers keep the
	// capabilities to read it and to give it back its owner.
	private := writePrivateFile(t, mustVolumePath(t, s, "podmv", "data"))
	want := digestVolume(t, s, "podmv", "data")
	_, err := s.starter.CreateBackup(ctx, moveRequest("podmv-1", "podmv"))
	require.NoError(t, err)
	v := s.waitDone("podmv-1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
	up := uploadOf(t, v.Status, "podmv", "data")
	assert.Contains(t, up.DataMover, "pod "+ns+"/", "the data mover was a pod")
	// A data mover whose heartbeats Temporal answers too late on a loaded
	// machine is replaced, so no kill does not mean one attempt.
	assert.Positive(t, up.Attempts)

	_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "podmv-r1", BackupName: "podmv-1",
		NamespaceMapping: map[string]string{"podmv": "podmv-copy"}}})
	require.NoError(t, err)
	r := s.waitRestore("podmv-r1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
	assert.Empty(t, datatree.Diff(want, digestVolume(t, s, "podmv-copy", "data"), 10), "byte-identical after a pod restored it")
	assertPrivateFile(t, filepath.Join(mustVolumePath(t, s, "podmv-copy", "data"), private))

	assertNoDataMoverPods(t, s)

	// SIGKILL of the data mover pod's process mid-upload, from the node:
	// the pod fails, and a new pod resumes from the checkpoint.
	makeClaims(t, s, "podkill", "data")
	wantKill := fillVolume(t, s, "podkill", "data", mediumData(33))
	total, err := datatree.Bytes(mustVolumePath(t, s, "podkill", "data"))
	require.NoError(t, err)
	_, err = s.starter.CreateBackup(ctx, moveRequest("podkill-1", "podkill"))
	require.NoError(t, err)
	waitUploaded(t, s, "podkill-1", "podkill", "data", total/2)
	s.freezeAtCheckpoint(t, "podkill-1", total*3/5, freezePodDataMover)
	pid := podDataMoverPID(t)
	t.Logf("SIGKILL data mover pod process %d", pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	v = s.waitDone("podkill-1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
	upKill := uploadOf(t, v.Status, "podkill", "data")
	assert.Equal(t, 2, upKill.Attempts, "a second data mover pod finished the upload")
	assert.Less(t, upKill.UploadedBytes, total/2, "the second pod uploaded less than half again")
	assert.Equal(t, 1, s.completeSnapshots(t, "podkill-1"))
	assert.Empty(t, datatree.Diff(wantKill, s.restoredDigest(t, upKill.SnapshotID), 10))
	assertNoDataMoverPods(t, s)

	// SIGKILL of the data mover pod's process mid-restore: a new pod
	// carries on, skipping what the first one wrote.
	_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{
		RestoreSpec: v1alpha1.RestoreSpec{Name: "podkill-r1", BackupName: "podkill-1", NamespaceMapping: map[string]string{"podkill": "podkill-copy"}},
		Options:     v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}}})
	require.NoError(t, err)
	at := waitRestored(t, s, "podkill-r1", "podkill-copy", "data", total*2/5)
	pid = podDataMoverPID(t)
	t.Logf("SIGKILL restoring data mover pod process %d at %d of %d bytes", pid, at.RestoredBytes, total)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	r = s.waitRestore("podkill-r1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
	vol := restoredVolume(t, r.Status, "podkill-copy", "data")
	require.NotNil(t, vol.Download)
	assert.Equal(t, 2, vol.Download.Attempts, "a second data mover pod finished the restore")
	assert.Positive(t, vol.Download.SkippedBytes, "the second pod skipped what the first wrote")
	assert.Empty(t, datatree.Diff(wantKill, digestVolume(t, s, "podkill-copy", "data"), 10), "byte-identical after the kill")
	assertNoDataMoverPods(t, s)

	// A data mover pod whose image the node does not have never starts:
	// the operation fails as soon as the pod shows it, naming the image
	// error. The prepare timeout is far longer than the wait below, so
	// only failing at once ends the backup in time.
	w.stop()
	bad := podWorker("cairn.local/not-there:v1")
	defer bad.stop()
	req := moveRequest("podmv-2", "podmv")
	req.DataMoverPrepareTimeout = &metav1.Duration{Duration: time.Hour}
	_, err = s.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	v = s.waitDone("podmv-2", 3*time.Minute)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase)
	failed := operation(t, v.Status, "podmv", "data")
	assert.Equal(t, v1alpha1.OperationFailed, failed.Phase)
	assert.Contains(t, failed.Error, v1alpha1.ErrTypeDataMoverNotStarted, "%+v", failed)
	assert.Contains(t, failed.Error, "the data mover of attempt 1 cannot start")
	assert.Contains(t, failed.Error, "ErrImageNeverPull", "the reason names the image error")
	recordHistory(t, s, v1alpha1.VolumeWorkflowID("podmv-2", v1alpha1.Volume{Namespace: "podmv", Claim: "data"}), "volume_data_upload_image_never_pulls.json")
	assertNoDataMoverPods(t, s)
}

// startPodMoverWorker starts a worker whose data movers are pods of image
// on the sandbox's node, checkpointing every second, with extra flags.
// Temporal listens on the host's loopback and the location is a host
// directory: data mover pods use the node's network and mount it.
func (s *stack) startPodMoverWorker(image string, extra ...string) *proc {
	s.t.Helper()
	loc, err := url.Parse(s.location)
	require.NoError(s.t, err)
	return s.startWorker(append([]string{"--data-dir", s.t.TempDir(), "--datamover-exposer", "pod", "--datamover-image", image,
		"--datamover-pull-policy", "Never", "--datamover-host-network", "--datamover-host-path", loc.Path,
		"--repository-password-secret", "cairn-repository", "--datamover-checkpoint-interval", "1s"}, extra...)...)
}

// podDataMoverPID is the process of the one running data mover pod, as
// the node's host sees it.
func podDataMoverPID(t *testing.T) int {
	t.Helper()
	return processPID(t, "/cairn\x00datamover\x00")
}

// freezePodDataMover stops the data mover pod's process until thawed.
func freezePodDataMover(t *testing.T) (thaw func()) {
	t.Helper()
	pid := podDataMoverPID(t)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
}

// assertNoDataMoverPods waits until no data mover pod or claim is left.
func assertNoDataMoverPods(t *testing.T, s *stack) {
	t.Helper()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	ns := worker.DefaultDataMoverNamespace
	deadline := time.Now().Add(time.Minute)
	for {
		sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelDataMover}
		pods, err := kc.CoreV1().Pods(ns).List(ctx, sel)
		require.NoError(t, err)
		claims, err := kc.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
		require.NoError(t, err)
		if len(pods.Items)+len(claims.Items) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "left behind: %d pods, %d claims", len(pods.Items), len(claims.Items))
		time.Sleep(200 * time.Millisecond)
	}
}

// privateOwner owns the file only its owner may read.
const privateOwner = 1000

// writePrivateFile writes private/key (mode 0600, in a 0700 directory)
// owned by privateOwner under dir, and returns its path relative to dir.
func writePrivateFile(t *testing.T, dir string) string {
	t.Helper()
	sub := filepath.Join(dir, "private")
	require.NoError(t, os.Mkdir(sub, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "key"), []byte("only its owner reads this"), 0o600))
	for _, p := range []string{sub, filepath.Join(sub, "key")} {
		require.NoError(t, os.Chown(p, privateOwner, privateOwner))
	}
	return filepath.Join("private", "key")
}

// assertPrivateFile checks that a restored private file has its owner
// and mode back.
func assertPrivateFile(t *testing.T, path string) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	st := info.Sys().(*syscall.Stat_t)
	assert.Equal(t, uint32(privateOwner), st.Uid, "the owner is restored")
	assert.Equal(t, uint32(privateOwner), st.Gid)
}
