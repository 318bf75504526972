package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/worker"
)

const repoPassword = "e2e repository password"

// moverStack is a CSI stack whose worker exposes volumes to local data
// mover processes.
type moverStack struct {
	*stack
	stateDir string
}

func newMoverStack(t *testing.T) *moverStack {
	return newMoverStackAt(t, "")
}

// newMoverStackAt is newMoverStack on an existing backup location: a
// second installation, with its own cluster and Temporal.
func newMoverStackAt(t *testing.T, locationURL string) *moverStack {
	s := newStackWith(t, locationURL, true)
	m := &moverStack{stack: s, stateDir: filepath.Join(t.TempDir(), "datamovers")}
	t.Cleanup(func() {
		if t.Failed() {
			m.logDataMovers(t)
		}
	})
	return m
}

// logDataMovers prints the end of every data mover's log, to explain a
// failure.
func (m *moverStack) logDataMovers(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(m.stateDir, "*.log"))
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if crash := goCrash(data); crash != "" {
			t.Logf("--- data mover log %s: the process crashed ---\n%s", filepath.Base(path), crash)
		}
		if len(data) > 4096 {
			data = data[len(data)-4096:]
		}
		t.Logf("--- data mover log %s (last 4 KiB) ---\n%s", filepath.Base(path), data)
	}
}

// goCrash is the head of a Go crash in a log (the panic or fatal error and
// the first goroutine), which the log's tail does not show; "" if none.
func goCrash(log []byte) string {
	for _, marker := range []string{"\npanic: ", "\nfatal error: ", "\nSIGQUIT", "\nSIGABRT", "\nruntime: "} {
		if i := bytes.Index(log, []byte(marker)); i >= 0 {
			head := log[i+1:]
			if len(head) > 6000 {
				head = head[:6000]
			}
			return string(head)
		}
	}
	return ""
}

// startMoverWorker starts a worker with the process exposer; env reaches
// the worker and, through it, its data movers (CAIRN_UPLOAD_BYTES_PER_SECOND
// and friends set datamover flags).
func (m *moverStack) startMoverWorker(env ...string) *proc {
	m.t.Helper()
	return m.startMoverWorkerWithPassword(repoPassword, env...)
}

func (m *moverStack) startMoverWorkerWithPassword(password string, env ...string) *proc {
	m.t.Helper()
	return m.startMoverWorkerArgs(password, nil, env...)
}

// startMoverWorkerArgs is startMoverWorker with a password and worker
// flags of the test's.
func (m *moverStack) startMoverWorkerArgs(password string, extra []string, env ...string) *proc {
	m.t.Helper()
	// --data-dir keeps the worker's kopia connection files out of the
	// source tree.
	args := []string{"worker", "--temporal-address", m.temporalAddr, "--kubeconfig", m.cluster.KubeconfigPath(),
		"--data-dir", filepath.Join(filepath.Dir(m.stateDir), "worker"),
		"--datamover-exposer", "process", "--csi-state-dir", m.cluster.CSIStateDir(), "--datamover-state-dir", m.stateDir}
	return startProcEnv(m.t, "worker", append([]string{"CAIRN_REPOSITORY_PASSWORD=" + password}, env...), append(args, extra...)...)
}

// fillVolume writes a data set into a claim's volume and returns its
// digest.
func fillVolume(t *testing.T, s *stack, namespace, claim string, spec datatree.Spec) map[string]string {
	t.Helper()
	dir, err := s.cluster.VolumePath(context.Background(), namespace, claim)
	require.NoError(t, err)
	_, err = datatree.Write(dir, spec)
	require.NoError(t, err)
	digest, err := datatree.Digest(dir)
	require.NoError(t, err)
	return digest
}

// repository opens the stack's kopia repository as a user would.
func (m *stack) repository(t *testing.T) *kopiarepo.Repository {
	t.Helper()
	r, err := kopiarepo.Open(context.Background(), kopiarepo.Config{Location: m.location, Password: repoPassword,
		ConfigDir: filepath.Join(t.TempDir(), "kopia")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// restoredDigest restores a kopia snapshot into a fresh directory and
// digests it.
func (m *stack) restoredDigest(t *testing.T, snapshotID string) map[string]string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "restored")
	_, err := m.repository(t).Restore(context.Background(), kopiarepo.RestoreRequest{SnapshotID: snapshotID, Path: dst})
	require.NoError(t, err)
	digest, err := datatree.Digest(dst)
	require.NoError(t, err)
	return digest
}

// repositoryDir is the kopia repository's directory in the file location.
func (m *stack) repositoryDir(t *testing.T) string {
	u, err := url.Parse(m.location)
	require.NoError(t, err)
	return filepath.Join(u.Path, "kopia")
}

// assertNoDataMoverLeftovers checks that no data mover process, kopia
// cache, claim, snapshot clone or cloned volume is left.
func (m *moverStack) assertNoDataMoverLeftovers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	kc := fastClient(t, m.cluster.Config())
	sc := snapshots(t, m.stack)
	ns := worker.DefaultDataMoverNamespace
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		if pids := exposer.Running(m.stateDir); len(pids) > 0 {
			left = append(left, "data mover processes")
		}
		if caches, _ := filepath.Glob(filepath.Join(m.stateDir, "*.kopia")); len(caches) > 0 {
			left = append(left, "data mover kopia caches")
		}
		sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelDataMover}
		if l, err := kc.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
			left = append(left, "claims")
		}
		if l, err := sc.SnapshotV1().VolumeSnapshots(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
			left = append(left, "snapshot clones")
		}
		if l, err := sc.SnapshotV1().VolumeSnapshotContents().List(ctx, sel); err != nil || len(l.Items) > 0 {
			left = append(left, "snapshot clone contents")
		}
		if l, err := kc.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
			for _, pv := range l.Items {
				if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
					left = append(left, "volume "+pv.Name)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "left behind: %v", left)
		time.Sleep(300 * time.Millisecond)
	}
}

// uploadOf is the data upload of a backup's operation on a claim.
func uploadOf(t *testing.T, st *v1alpha1.BackupStatus, namespace, claim string) *v1alpha1.DataUploadInfo {
	t.Helper()
	op := operation(t, st, namespace, claim)
	require.Equal(t, v1alpha1.OperationCompleted, op.Phase, "operation: %+v", op)
	require.NotNil(t, op.Upload, "operation: %+v", op)
	return op.Upload
}

// throttled is the environment of a worker whose data movers upload
// slowly enough to be caught mid-upload, checkpointing every second:
// mediumData takes about 20 seconds.
var throttled = []string{"CAIRN_UPLOAD_BYTES_PER_SECOND=10000000", "CAIRN_CHECKPOINT_INTERVAL=1s", "CAIRN_PROGRESS_INTERVAL=1s"}

// moveRequest is a data-moving backup of one namespace whose dead data
// movers are noticed within 10 seconds.
func moveRequest(name, namespace string) starter.CreateBackupRequest {
	return starter.CreateBackupRequest{
		BackupSpec: v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{namespace}, SnapshotMoveData: true},
		Options:    v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}},
	}
}

// uploadHeartbeat reads the progress the volume's running upload last
// heartbeated, from its child workflow's pending activity.
func uploadHeartbeat(t *testing.T, s *stack, backup string, v v1alpha1.Volume) (kopiarepo.UploadProgress, bool) {
	t.Helper()
	var p kopiarepo.UploadProgress
	desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), v1alpha1.VolumeWorkflowID(backup, v), "")
	if err != nil {
		return p, false
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != uploadVolumeActivity || pa.GetHeartbeatDetails() == nil {
			continue
		}
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil {
			return p, true
		}
	}
	return p, false
}

// pendingActivities says, for a failure's message, what a workflow's
// pending activities are doing.
func pendingActivities(t *testing.T, s *stack, workflowID string) string {
	t.Helper()
	desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, pa := range desc.GetPendingActivities() {
		out = append(out, fmt.Sprintf("%s %s attempt %d %s", pa.GetActivityType().GetName(), pa.GetState(), pa.GetAttempt(),
			pa.GetLastFailure().GetMessage()))
	}
	return fmt.Sprintf("%s %s: %s", workflowID, desc.GetWorkflowExecutionInfo().GetStatus(), strings.Join(out, "; "))
}

// waitUploaded waits until the volume's upload has sent more than bytes.
func waitUploaded(t *testing.T, s *stack, backup, namespace, claim string, bytes int64) kopiarepo.UploadProgress {
	t.Helper()
	v := v1alpha1.Volume{Namespace: namespace, Claim: claim}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, ok := uploadHeartbeat(t, s, backup, v)
		if ok && p.UploadedBytes > bytes {
			return p
		}
		require.True(t, time.Now().Before(deadline), "upload of %s/%s never passed %d bytes (last %+v)", namespace, claim, bytes, p)
		time.Sleep(100 * time.Millisecond)
	}
}

// killDataMover SIGKILLs the one running data mover process.
func (m *moverStack) killDataMover(t *testing.T) {
	t.Helper()
	pids := exposer.Running(m.stateDir)
	require.Len(t, pids, 1, "one data mover runs")
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for len(exposer.Running(m.stateDir)) > 0 {
		require.True(t, time.Now().Before(deadline), "data mover %d survived SIGKILL", pids[0])
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshotCounts counts a backup's complete kopia snapshots and its
// checkpoints, and says how much the best checkpoint covers, with a
// connection of its own that it closes (it is polled).
func (m *stack) snapshotCounts(t *testing.T, backup string) (complete, checkpoints int, covered int64) {
	t.Helper()
	r, err := kopiarepo.Open(context.Background(), kopiarepo.Config{Location: m.location, Password: repoPassword,
		ConfigDir: filepath.Join(t.TempDir(), "kopia")})
	require.NoError(t, err)
	defer r.Close(context.Background())
	snaps, err := r.BackupSnapshots(context.Background(), backup)
	require.NoError(t, err)
	for _, s := range snaps {
		if s.Complete {
			complete++
		} else {
			checkpoints++
			covered = max(covered, s.Bytes)
		}
	}
	return complete, checkpoints, covered
}

func (m *stack) completeSnapshots(t *testing.T, backup string) int {
	n, _, _ := m.snapshotCounts(t, backup)
	return n
}

// mediumData is enough data to catch a throttled upload in the middle;
// each seed is new data, which the repository cannot deduplicate.
func mediumData(seed uint64) datatree.Spec {
	return datatree.Spec{LargeFiles: 100, LargeSize: 2 << 20, SmallFiles: 100, SmallSize: 8192, Seed: seed, NoSparse: true}
}

// freezeDataMover stops the one running data mover (SIGSTOP): its upload
// or restore stands still until thawed, so what the test does meanwhile
// lands mid-transfer whatever the machine's speed.
func (m *moverStack) freezeDataMover(t *testing.T) (thaw func()) {
	t.Helper()
	pids := exposer.Running(m.stateDir)
	require.Len(t, pids, 1, "one data mover runs")
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGSTOP))
	return func() { _ = syscall.Kill(pids[0], syscall.SIGCONT) }
}

// killTemporalMidTransfer SIGKILLs Temporal with the one data mover
// frozen, so its transfer cannot end before the server is gone, then
// starts Temporal again on the same port and SQLite file. It returns when
// the kill was.
func (m *moverStack) killTemporalMidTransfer(t *testing.T) time.Time {
	t.Helper()
	thaw := m.freezeDataMover(t)
	m.temporal.kill()
	killedAt := time.Now()
	thaw()
	m.startTemporal()
	return killedAt
}

// freezeAtCheckpoint waits until a checkpoint of the backup's volume
// covers at least bytes, then freezes the data mover there and checks,
// while it is frozen, that its upload has not ended.
func (m *moverStack) freezeAtCheckpoint(t *testing.T, backup string, bytes int64) {
	t.Helper()
	m.stack.freezeAtCheckpoint(t, backup, bytes, m.freezeDataMover)
}

// freezeAtCheckpoint is moverStack.freezeAtCheckpoint for a data mover
// that freeze stops until thawed. The repository is read while the data
// mover runs: frozen through one read after another, it could miss its
// heartbeats and be replaced. Once a checkpoint is big enough, one read
// while frozen proves the upload still has the rest to do (at the
// throttled rate, a fifth of the data takes seconds, far more than the
// moment between that read and the freeze).
func (m *stack) freezeAtCheckpoint(t *testing.T, backup string, bytes int64, freeze func(*testing.T) (thaw func())) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		complete, _, covered := m.snapshotCounts(t, backup)
		require.Zero(t, complete, "backup %s finished its upload before a checkpoint covered %d bytes", backup, bytes)
		if covered >= bytes {
			break
		}
		require.True(t, time.Now().Before(deadline), "backup %s saved no checkpoint of %d bytes (best %d)", backup, bytes, covered)
		time.Sleep(200 * time.Millisecond)
	}
	freeze(t)
	complete, _, covered := m.snapshotCounts(t, backup)
	require.Zero(t, complete, "backup %s finished its upload before the data mover froze", backup)
	t.Logf("data mover frozen with a checkpoint of %d bytes", covered)
}

// logActivityFailures logs why the volume's activities failed or timed
// out, to explain an unexpected retry.
func logActivityFailures(t *testing.T, s *stack, backup string, v v1alpha1.Volume) {
	t.Helper()
	for _, ev := range runHistory(t, s, v1alpha1.VolumeWorkflowID(backup, v)) {
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil {
			t.Logf("activity failed: %v", a.GetFailure())
		}
		if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil {
			t.Logf("activity timed out: %v", a.GetFailure())
		}
	}
}

// failedBackup starts a data-moving backup that is to fail before its
// volumes move, waits for it, and returns its reason.
func (m *moverStack) failedBackup(t *testing.T, req starter.CreateBackupRequest) string {
	t.Helper()
	_, err := m.starter.CreateBackup(context.Background(), req)
	require.NoError(t, err)
	v := m.waitDone(req.Name, 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseFailed, v.Phase)
	require.NotNil(t, v.Status)
	return v.Status.FailureReason
}

// failedMove starts a data-moving backup whose one volume operation is
// to fail, waits for it, and returns that operation.
func (m *moverStack) failedMove(t *testing.T, req starter.CreateBackupRequest, namespace string) v1alpha1.Operation {
	t.Helper()
	_, err := m.starter.CreateBackup(context.Background(), req)
	require.NoError(t, err)
	v := m.waitDone(req.Name, 3*time.Minute)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase)
	op := operation(t, v.Status, namespace, "data")
	assert.Equal(t, v1alpha1.OperationFailed, op.Phase)
	return op
}
