package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

var (
	buildAdapter  sync.Once
	adapterBin    string
	adapterPlugin string
	adapterErr    error
)

// veleroAdapter builds the Velero plugin adapter (adapters/velero, a
// module of its own) and its example plugin once per package run; it
// returns the adapter and the directory of plugins.
func veleroAdapter(t *testing.T) (bin, pluginDir string) {
	t.Helper()
	buildAdapter.Do(func() {
		dir := filepath.Join(filepath.Dir(cairnBin), "velero")
		adapterBin, adapterPlugin = filepath.Join(dir, "cairn-velero-adapter"), filepath.Join(dir, "plugins")
		for _, b := range [][2]string{{adapterBin, "."}, {filepath.Join(adapterPlugin, "exampleplugin"), "./exampleplugin"}} {
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Dir = filepath.Join("..", "..", "adapters", "velero")
			if out, err := cmd.CombinedOutput(); err != nil {
				adapterErr = fmt.Errorf("build %s: %w\n%s", b[1], err, out)
				return
			}
		}
	})
	require.NoError(t, adapterErr)
	return adapterBin, adapterPlugin
}

// childrenOf are the processes whose parent is pid: the plugin processes
// Velero's plugin client started for the adapter.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ")".
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// TestVeleroPluginThroughTheAdapter: a plugin written against Velero's
// own plugin framework (a v1 and a v2 backup item action, a v2 restore
// item action), served by cairn-velero-adapter as a cairn extension.
//   - The adapter prints the registration of the types its plugins apply
//     to.
//   - A backup stores every ConfigMap as the v1 action changed it, and
//     waits for the v2 action's async export. The adapter (and its plugin
//     processes) are killed (SIGKILL) while the export is half-way: the
//     operation's retried attempt, in a new adapter, asks the plugin's
//     progress again and the backup completes with the operation
//     completed.
//   - A restore into another namespace creates the ConfigMaps as the
//     restore action changed them, skips the one it skips, restores first
//     the Secret it names as an additional item (named as backed up,
//     mapped by the adapter), and waits for its import. The plugin's
//     process alone is killed (SIGKILL) while the import is half-way:
//     Velero's plugin client starts it again at the next progress call,
//     and the import completes.
func TestVeleroPluginThroughTheAdapter(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	bin, plugins := veleroAdapter(t)
	const queue = "e2e-velero"
	printed, err := exec.Command(bin, "--plugin-dir", plugins, "--task-queue", queue, "--print-registration", "velero").Output()
	require.NoError(t, err)
	assert.Equal(t, "apiVersion: cairn.io/v1alpha1\nkind: Extensions\nextensions:\n- name: velero\n  taskQueue: e2e-velero\n"+
		"  backup: {resources: [configmaps]}\n  restore: {resources: [configmaps]}\n", string(printed))

	state := t.TempDir()
	hold := filepath.Join(state, "hold")
	require.NoError(t, os.WriteFile(hold, nil, 0o600))
	env := []string{"EXAMPLE_PLUGIN_STATE=" + state}
	args := []string{"--address", s.temporalAddr, "--task-queue", queue, "--plugin-dir", plugins, "--poll", "200ms"}
	adapter := startBinary(t, "velero-adapter", bin, env, args...)
	s.startWorker("--extensions", extensionsFile(t, `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: velero
  taskQueue: e2e-velero
  backup: {resources: [configmaps], includedNamespaces: [vel]}
  restore: {resources: [configmaps], includedNamespaces: [vel-target]}
`))

	kc := fastClient(t, s.cluster.Config())
	ensureNamespace(t, kc, "vel")
	_, err = kc.CoreV1().Secrets("vel").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": "secret"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, cm := range []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "exported", Labels: map[string]string{"example.cairn.io/export": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "skipped", Annotations: map[string]string{"example.cairn.io/skip-restore": ""}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "needs-db", Annotations: map[string]string{"example.cairn.io/needs": "db"}}},
	} {
		_, err := kc.CoreV1().ConfigMaps("vel").Create(ctx, &cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "vel-1", IncludedNamespaces: []string{"vel"}},
		Options: v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
	require.NoError(t, err)
	opWorkflow := v1alpha1.ExtensionOperationWorkflowID("vel-1", "velero", "example.cairn.io/export/export.vel-1.vel.exported")
	awaitOperationChunk(t, s, v1alpha1.BackupWorkflowID("vel-1"), opWorkflow)
	orphans := childrenOf(t, adapter.cmd.Process.Pid)
	adapter.kill()
	for _, pid := range orphans {
		_ = syscall.Kill(pid, syscall.SIGKILL) // Velero's plugin client gives its plugins no parent-death signal
	}
	adapter = startBinary(t, "velero-adapter-2", bin, env, args...)
	require.NoError(t, os.Remove(hold))

	v := s.waitDone("vel-1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Equal(t, &v1alpha1.OperationCounts{Total: 1, Completed: 1}, v.Status.ExtensionOperations)
	assert.Greater(t, activityAttempt(t, s, opWorkflow, extension.BackupOperationV1), int32(1),
		"the kill landed mid-operation: its activity ran again, in the new adapter")
	assert.FileExists(t, filepath.Join(state, "export.vel-1.vel.exported.done"))
	stored := tarballItems(t, s, "vel-1", "configmaps")
	require.Contains(t, stored, "vel/plain")
	for key, raw := range stored {
		var cm metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(raw, &cm))
		assert.Equal(t, "vel-1", cm.Annotations["example.cairn.io/backed-up-by"], "%s stored as the v1 action changed it", key)
	}
	var ops v1alpha1.OperationsFile
	require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/vel-1/operations.json"), &ops))
	require.Len(t, ops.Operations, 1)
	assert.Equal(t, v1alpha1.OperationCompleted, ops.Operations[0].Phase)
	assert.Equal(t, "export done", ops.Operations[0].Progress)

	require.NoError(t, os.WriteFile(hold, nil, 0o600))
	_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "vel-r1", BackupName: "vel-1",
		NamespaceMapping: map[string]string{"vel": "vel-target"}}})
	require.NoError(t, err)
	importWorkflow := v1alpha1.RestoreOperationWorkflowID("vel-r1", "velero", "example.cairn.io/restore/import.vel-r1.vel-target.exported")
	awaitOperationChunk(t, s, v1alpha1.RestoreWorkflowID("vel-r1"), importWorkflow)
	children := childrenOf(t, adapter.cmd.Process.Pid)
	require.NotEmpty(t, children, "the adapter runs its plugins as child processes")
	for _, pid := range children {
		t.Logf("SIGKILL plugin process (pid %d)", pid)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	require.NoError(t, os.Remove(hold))
	r := s.waitRestore("vel-r1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
	restarted := childrenOf(t, adapter.cmd.Process.Pid)
	require.NotEmpty(t, restarted, "the plugin was started again")
	for _, pid := range children {
		assert.NotContains(t, restarted, pid)
	}
	assert.Equal(t, &v1alpha1.OperationCounts{Total: 1, Completed: 1}, r.Status.ExtensionOperations, "the import ran")
	assert.FileExists(t, filepath.Join(state, "import.vel-r1.vel-target.exported.done"))
	for _, name := range []string{"plain", "exported", "needs-db"} {
		cm, err := kc.CoreV1().ConfigMaps("vel-target").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, "vel-r1", cm.Labels["example.cairn.io/restored-by"], "%s created as the restore action changed it", name)
	}
	_, err = kc.CoreV1().ConfigMaps("vel-target").Get(ctx, "skipped", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the plugin skips it: %v", err)
	outcomes := s.outcomes("vel-r1")
	assert.Equal(t, "extension velero: velero plugin example.cairn.io/restore skips it", outcomes["configmaps vel-target/skipped"].Reason)
	db, err := kc.CoreV1().Secrets("vel-target").Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	needs, err := kc.CoreV1().ConfigMaps("vel-target").Get(ctx, "needs-db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Less(t, revision(t, db.ResourceVersion), revision(t, needs.ResourceVersion),
		"the Secret the plugin named was restored before its ConfigMap, though Secrets come after ConfigMaps")
}
