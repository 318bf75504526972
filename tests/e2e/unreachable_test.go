package e2e

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// apiServerHost is the host:port of the stack's API server.
func apiServerHost(t *testing.T, s *stack) string {
	t.Helper()
	u, err := url.Parse(s.cluster.Config().Host)
	require.NoError(t, err)
	return u.Host
}

// endWhenHeartbeat waits until the run's heartbeat shows what seen wants,
// then terminates the run and kills its worker w.
func endWhenHeartbeat[P any](t *testing.T, s *stack, w *proc, workflowID string, seen func(P) bool) {
	t.Helper()
	waitHeartbeat(t, s, workflowID, "", seen)
	require.NoError(t, s.temporalC.TerminateWorkflow(context.Background(), workflowID, "", "seen"))
	w.kill()
}

// kubeconfigVia writes a copy of the sandbox kubeconfig whose server is
// reached through addr.
func kubeconfigVia(t *testing.T, s *stack, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.cluster.KubeconfigPath())
	require.NoError(t, err)
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		require.NoError(t, err)
		u.Host = addr
		c.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestUnreachableAPIServerFailsWithReason cuts the worker off from the API
// server in the middle of a backup: the activity keeps retrying with the
// last error in its heartbeat (what the Temporal UI shows), then the backup
// fails with a readable reason after the configured deadline, and nothing
// in the location looks like a complete backup.
func TestUnreachableAPIServerFailsWithReason(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	seedConfigMaps(t, s.cluster.Config(), "un", seedNamespaces, seedPerNS)
	// cutBackup starts a worker that reaches the API server through a
	// proxy and a backup that may be unreachable for the given time, and
	// cuts the proxy in the middle of the ConfigMaps.
	cutBackup := func(name string, unreachable time.Duration) *proc {
		proxy := newTCPProxy(t, apiServerHost(t, s))
		w := startProc(t, "worker", "worker", "--temporal-address", s.temporalAddr,
			"--kubeconfig", kubeconfigVia(t, s, proxy.addr()), "--page-interval", "100ms")
		req := slowBackup(name, "un")
		req.Options.ClusterUnreachableTimeout = &metav1.Duration{Duration: unreachable}
		_, err := s.starter.CreateBackup(context.Background(), req)
		require.NoError(t, err)
		waitMidConfigMaps(t, s, name)
		proxy.cut()
		return w
	}

	// While it retries, the pending activity's heartbeat says why. This
	// run's deadline is far off, so the heartbeat is seen however slow
	// the machine is; the run is then ended by hand.
	w := cutBackup("unreachable-retrying", 30*time.Minute)
	endWhenHeartbeat(t, s, w, v1alpha1.BackupWorkflowID("unreachable-retrying"), func(p cluster.CollectProgress) bool {
		return p.Current.LastError != "" && p.Current.UnreachableSince != nil
	})

	cutBackup("unreachable", 8*time.Second)
	v := s.waitDone("unreachable", 2*time.Minute)
	require.Equal(t, v1alpha1.PhaseFailed, v.Phase)
	require.NotNil(t, v.Status)
	assert.Contains(t, v.Status.FailureReason, "ClusterUnreachable")
	assert.Contains(t, v.Status.FailureReason, "unreachable for")

	for _, key := range locationKeys(t, s.location, "unreachable") {
		assert.False(t, strings.HasSuffix(key, "backup.json"), "a failed backup must not be committed: %s", key)
		assert.False(t, strings.HasSuffix(key, "resources.tar.gz"), "no half-written tarball may stay: %s", key)
	}
}

// TestRestoreUnreachableAPIServerFailsWithReason cuts the worker off from
// the API server in the middle of a restore: the apply waits with the last
// error in its heartbeat, the restore fails with a readable reason after
// the configured deadline, and its results still list what was applied.
func TestRestoreUnreachableAPIServerFailsWithReason(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	seedConfigMaps(t, s.cluster.Config(), "ru", seedNamespaces, seedPerNS)
	backupWorker := s.startWorker()
	s.backup(v1alpha1.BackupSpec{Name: "ru-1", IncludedNamespaces: []string{"ru-*"}})
	backupWorker.kill()
	// cutRestore is cutBackup's twin: a restore into namespaces of its
	// own, cut after three batches of ConfigMaps.
	cutRestore := func(name string, unreachable time.Duration) *proc {
		proxy := newTCPProxy(t, apiServerHost(t, s))
		w := startProc(t, "worker", "worker", "--temporal-address", s.temporalAddr,
			"--kubeconfig", kubeconfigVia(t, s, proxy.addr()), "--batch-interval", "150ms")
		mapping := map[string]string{}
		for i := range seedNamespaces {
			mapping[fmt.Sprintf("ru-%02d", i)] = fmt.Sprintf("%s-%02d", name, i)
		}
		_, err := s.starter.CreateRestore(context.Background(), starter.CreateRestoreRequest{
			RestoreSpec: v1alpha1.RestoreSpec{Name: name, BackupName: "ru-1", NamespaceMapping: mapping},
			Options: v1alpha1.RestoreOptions{BatchSize: 50, ClusterUnreachableTimeout: &metav1.Duration{Duration: unreachable},
				HeartbeatTimeout: &metav1.Duration{Duration: 5 * time.Second}},
		})
		require.NoError(t, err)
		waitApplying(t, s, name, "configmaps", 3)
		proxy.cut()
		return w
	}

	w := cutRestore("ru-retrying", 30*time.Minute)
	endWhenHeartbeat(t, s, w, v1alpha1.RestoreWorkflowID("ru-retrying"), func(p restore.ApplyProgress) bool {
		return p.LastError != "" && p.UnreachableSince != nil
	})

	cutRestore("ru-r", 8*time.Second)
	v := s.waitRestore("ru-r", 2*time.Minute)
	require.Equal(t, v1alpha1.PhaseFailed, v.Phase)
	assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeClusterUnreachable)
	assert.Contains(t, v.Status.FailureReason, "unreachable for")
	outcomes := s.outcomes("ru-r")
	assert.GreaterOrEqual(t, len(outcomes), 3*50, "the results list the batches applied before the cut")
	assert.Equal(t, len(outcomes), v.Status.ItemsRestored+v.Status.ItemsSkipped+v.Status.ItemsFailed)
}
