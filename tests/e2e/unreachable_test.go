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
	"go.temporal.io/sdk/converter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

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
	s := newStack(t)
	seedConfigMaps(t, s.cluster.Config(), "un", seedNamespaces, seedPerNS)
	apiURL, err := url.Parse(s.cluster.Config().Host)
	require.NoError(t, err)
	proxy := newTCPProxy(t, apiURL.Host)
	startProc(t, "worker", "worker", "--temporal-address", s.temporalAddr,
		"--kubeconfig", kubeconfigVia(t, s, proxy.addr()), "--page-interval", "100ms")

	req := slowBackup("unreachable", "un")
	req.Options.ClusterUnreachableTimeout = &metav1.Duration{Duration: 8 * time.Second}
	_, err = s.starter.CreateBackup(context.Background(), req)
	require.NoError(t, err)
	waitMidConfigMaps(t, s, "unreachable")
	proxy.cut()

	// While it retries, the pending activity's heartbeat says why.
	deadline := time.Now().Add(time.Minute)
	var sawLastError bool
	for !sawLastError && time.Now().Before(deadline) {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflows.BackupWorkflowID("unreachable"), "")
		require.NoError(t, err)
		for _, pa := range desc.GetPendingActivities() {
			var p cluster.CollectProgress
			if pa.GetHeartbeatDetails() != nil && converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil &&
				p.LastError != "" && p.UnreachableSince != nil {
				sawLastError = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.True(t, sawLastError, "a retrying collection should carry the last error in its heartbeat")

	v := s.waitDone("unreachable", 2*time.Minute)
	require.Equal(t, workflows.PhaseFailed, v.Phase)
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
	s := newStack(t)
	seedConfigMaps(t, s.cluster.Config(), "ru", seedNamespaces, seedPerNS)
	apiURL, err := url.Parse(s.cluster.Config().Host)
	require.NoError(t, err)
	proxy := newTCPProxy(t, apiURL.Host)
	startProc(t, "worker", "worker", "--temporal-address", s.temporalAddr,
		"--kubeconfig", kubeconfigVia(t, s, proxy.addr()), "--batch-interval", "150ms")
	s.backup(workflows.BackupSpec{Name: "ru-1", IncludedNamespaces: []string{"ru-*"}})

	mapping := map[string]string{}
	for i := range seedNamespaces {
		mapping[fmt.Sprintf("ru-%02d", i)] = fmt.Sprintf("ru-%02d-back", i)
	}
	_, err = s.starter.CreateRestore(context.Background(), starter.CreateRestoreRequest{
		RestoreSpec: workflows.RestoreSpec{Name: "ru-r", BackupName: "ru-1", NamespaceMapping: mapping},
		Options: workflows.RestoreOptions{BatchSize: 50, ClusterUnreachableTimeout: &metav1.Duration{Duration: 8 * time.Second},
			HeartbeatTimeout: &metav1.Duration{Duration: 5 * time.Second}},
	})
	require.NoError(t, err)
	waitApplying(t, s, "ru-r", "configmaps", 3)
	proxy.cut()

	deadline := time.Now().Add(time.Minute)
	var sawLastError bool
	for !sawLastError && time.Now().Before(deadline) {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflows.RestoreWorkflowID("ru-r"), "")
		require.NoError(t, err)
		for _, pa := range desc.GetPendingActivities() {
			var p restore.ApplyProgress
			if pa.GetHeartbeatDetails() != nil && converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil &&
				p.LastError != "" && p.UnreachableSince != nil {
				sawLastError = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.True(t, sawLastError, "a waiting apply should carry the last error in its heartbeat")

	v := s.waitRestore("ru-r", 2*time.Minute)
	require.Equal(t, workflows.PhaseFailed, v.Phase)
	assert.Contains(t, v.Status.FailureReason, workflows.ErrTypeClusterUnreachable)
	assert.Contains(t, v.Status.FailureReason, "unreachable for")
	outcomes := s.outcomes("ru-r")
	assert.GreaterOrEqual(t, len(outcomes), 3*50, "the results list the batches applied before the cut")
	assert.Equal(t, len(outcomes), v.Status.ItemsRestored+v.Status.ItemsSkipped+v.Status.ItemsFailed)
}
