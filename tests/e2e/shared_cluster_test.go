package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/dev/sandbox"
)

// shared is the control plane the tests that stay in namespaces of their
// own share: started by the first of them, stopped by TestMain.
var shared struct {
	once    sync.Once
	dir     string
	cluster *sandbox.Cluster
	err     error
}

// newSharedStack is newStack on the shared control plane: its own
// Temporal, workers and location, the cluster of others. For a test that
// touches only namespaces of its own prefix and reads no more of the
// cluster than them. A test that changes what others would see (CRDs,
// cluster-scoped objects, cluster RBAC, the API server itself) or backs
// up the whole cluster takes newStack.
func newSharedStack(t *testing.T) *stack {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "cairn-e2e-shared-")
		if shared.err == nil {
			shared.cluster, shared.err = startCluster(filepath.Join(shared.dir, "sandbox"), sandbox.Options{})
		}
	})
	require.NoError(t, shared.err, "the shared control plane")
	return newStackOn(t, shared.cluster, "")
}

// stopSharedCluster stops the shared control plane, if a test started it.
func stopSharedCluster() {
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stop the shared control plane:", err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}
