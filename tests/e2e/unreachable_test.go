package e2e

import (
	"context"
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
