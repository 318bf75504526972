package e2e

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/exposer"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/worker"
	"github.com/cairn-backup/cairn/workflows"
)

const repoPassword = "e2e repository password"

// moverStack is a CSI stack whose worker exposes volumes to local data
// mover processes.
type moverStack struct {
	*stack
	stateDir string
}

func newMoverStack(t *testing.T) *moverStack {
	s := newCSIStack(t)
	return &moverStack{stack: s, stateDir: filepath.Join(t.TempDir(), "datamovers")}
}

// startMoverWorker starts a worker with the process exposer; env reaches
// the worker and, through it, its data movers (CAIRN_UPLOAD_BYTES_PER_SECOND
// and friends set datamover flags).
func (m *moverStack) startMoverWorker(env ...string) *proc {
	m.t.Helper()
	args := []string{"worker", "--temporal-address", m.temporalAddr, "--kubeconfig", m.cluster.KubeconfigPath(),
		"--datamover-exposer", "process", "--csi-state-dir", m.cluster.CSIStateDir(), "--datamover-state-dir", m.stateDir}
	return startProcEnv(m.t, "worker", append([]string{"CAIRN_REPOSITORY_PASSWORD=" + repoPassword}, env...), args...)
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
func (m *moverStack) repository(t *testing.T) *kopiarepo.Repository {
	t.Helper()
	r, err := kopiarepo.Open(context.Background(), kopiarepo.Config{Location: m.location, Password: repoPassword,
		ConfigDir: filepath.Join(t.TempDir(), "kopia")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// restoredDigest restores a kopia snapshot into a fresh directory and
// digests it.
func (m *moverStack) restoredDigest(t *testing.T, snapshotID string) map[string]string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "restored")
	_, err := m.repository(t).Restore(context.Background(), kopiarepo.RestoreRequest{SnapshotID: snapshotID, Path: dst})
	require.NoError(t, err)
	digest, err := datatree.Digest(dst)
	require.NoError(t, err)
	return digest
}

// repositoryDir is the kopia repository's directory in the file location.
func (m *moverStack) repositoryDir(t *testing.T) string {
	u, err := url.Parse(m.location)
	require.NoError(t, err)
	return filepath.Join(u.Path, "kopia")
}

// assertNoDataMoverLeftovers checks that no data mover process, claim,
// snapshot clone or cloned volume is left.
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
		sel := metav1.ListOptions{LabelSelector: exposer.LabelDataMover}
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
func uploadOf(t *testing.T, st *workflows.BackupStatus, namespace, claim string) *workflows.DataUploadInfo {
	t.Helper()
	op := operation(t, st, namespace, claim)
	require.Equal(t, workflows.OperationCompleted, op.Phase, "operation: %+v", op)
	require.NotNil(t, op.Upload, "operation: %+v", op)
	return op.Upload
}
