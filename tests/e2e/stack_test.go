package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/logging"
	"github.com/cairn-backup/cairn/internal/sealing"
	"github.com/cairn-backup/cairn/starter"
)

// stack is one cairn installation under test: a sandbox cluster, Temporal
// in its own process (`cairn dev --no-worker`), workers in theirs, and a
// file backup location.
type stack struct {
	t            *testing.T
	cluster      *sandbox.Cluster
	dataDir      string
	temporalAddr string
	location     string
	temporal     *proc
	temporalC    client.Client
	starter      *starter.Client
	// locations opens the location as the stack's workers do: with the
	// keys of useEncryptionKey, if any.
	locations *location.Opener
}

// newStack is a stack with a control plane of its own, for a test that
// changes what other tests would see in a shared one (newSharedStack).
func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackAt(t, "")
}

// newStackAt is newStack on an existing backup location: a second cairn
// installation, with its own cluster and Temporal, sharing the location.
func newStackAt(t *testing.T, locationURL string) *stack {
	t.Helper()
	return newStackWith(t, locationURL, false)
}

// newCSIStack is newStack with the sandbox's CSI stack: the test driver,
// the external provisioner and snapshotter, StorageClass cairn-csi. CSI
// stacks are not shared: a test drives its driver (snapshot delays and
// failures), and the volumes and snapshot contents it makes are
// cluster-wide.
func newCSIStack(t *testing.T) *stack {
	t.Helper()
	return newStackWith(t, "", true)
}

// newNodeStack is newCSIStack with the sandbox's node, whose containerd
// has the e2e cairn binary as image sandbox.CairnImage.
func newNodeStack(t *testing.T) *stack {
	t.Helper()
	return newNodeStackAt(t, "")
}

// newNodeStackAt is newNodeStack on an existing backup location.
func newNodeStackAt(t *testing.T, locationURL string) *stack {
	t.Helper()
	return newStackOpts(t, locationURL, sandbox.Options{CSI: true, Node: true, CairnBinary: cairnBin})
}

func newStackWith(t *testing.T, locationURL string, csi bool) *stack {
	t.Helper()
	return newStackOpts(t, locationURL, sandbox.Options{CSI: csi})
}

func newStackOpts(t *testing.T, locationURL string, opts sandbox.Options) *stack {
	t.Helper()
	if opts.Node {
		// The node has machine-wide names (its node name, cgroup root
		// and iptables chain): tests of this package and of
		// dev/sandbox that run in parallel take turns at it.
		turnCtx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a bound for a stuck holder, not a verdict
		release, err := sandbox.TakeNodeTurn(turnCtx)
		cancel()
		require.NoError(t, err)
		t.Cleanup(release) // registered first: runs after the node stops
	}
	dir := t.TempDir()
	cluster, err := startCluster(filepath.Join(dir, "sandbox"), opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Logf("sandbox stop: %v", err) // leftovers on the host are reported, not a verdict on the test
		}
	})
	return newStackOn(t, cluster, locationURL)
}

// startCluster starts a sandbox cluster in dataDir.
func startCluster(dataDir string, opts sandbox.Options) (*sandbox.Cluster, error) {
	binDir, err := sandbox.DefaultBinDir()
	if err != nil {
		return nil, fmt.Errorf("sandbox binaries missing (run `make sandbox-bins`): %w", err)
	}
	log, err := logging.New("warn", "console")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a broken machine, not a verdict
	defer cancel()
	opts.BinDir, opts.DataDir, opts.Log = binDir, dataDir, log
	return sandbox.Start(ctx, opts)
}

// newStackOn is a stack of its own (Temporal, location) on cluster.
func newStackOn(t *testing.T, cluster *sandbox.Cluster, locationURL string) *stack {
	t.Helper()
	dir := t.TempDir()
	s := &stack{
		t: t, cluster: cluster,
		dataDir:      filepath.Join(dir, "cairn"),
		temporalAddr: freePort(t),
		location:     locationURL,
	}
	if s.location == "" {
		s.location = "file://" + filepath.Join(dir, "location")
	}
	s.startTemporal()
	return s
}

// startTemporal starts (or restarts, on the same port and SQLite file) the
// Temporal process and waits until the namespace answers.
func (s *stack) startTemporal() {
	s.t.Helper()
	s.temporal = startProc(s.t, "temporal", "dev", "--no-worker", "--no-api", "--ui-address", "",
		"--data-dir", s.dataDir, "--temporal-address", s.temporalAddr)
	c := waitTemporal(s.t, s.temporalAddr)
	if s.temporalC != nil {
		s.temporalC.Close()
	}
	s.temporalC = c
	s.starter = starter.New(c, starter.Options{DefaultLocation: s.location, UIBaseURL: "http://127.0.0.1:8233", Opener: s.locations})
}

// locationDir is the directory of the stack's file location.
func (s *stack) locationDir() string {
	return strings.TrimPrefix(strings.SplitN(s.location, "?", 2)[0], "file://")
}

// useEncryptionKey writes an identity file holding keys (each an age
// identity file's content; the first encrypts), makes the stack's own
// reads use it, and returns its path for workers' --encryption-key.
func (s *stack) useEncryptionKey(keys ...[]byte) string {
	s.t.Helper()
	path := filepath.Join(s.t.TempDir(), "encryption-key")
	require.NoError(s.t, os.WriteFile(path, bytes.Join(keys, nil), 0o600))
	k, err := sealing.LoadKeyring(path)
	require.NoError(s.t, err)
	s.locations = &location.Opener{Keyring: k}
	s.starter = starter.New(s.temporalC, starter.Options{DefaultLocation: s.location, UIBaseURL: "http://127.0.0.1:8233", Opener: s.locations})
	return path
}

// newKey is a new age identity file's content.
func newKey(t *testing.T) []byte {
	t.Helper()
	k, err := sealing.Generate()
	require.NoError(t, err)
	return k
}

// waitTemporal dials the Temporal server at addr until its default
// namespace answers queries on cairn's search attributes; the client is
// closed when the test ends.
func waitTemporal(t *testing.T, addr string) client.Client {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
		if err == nil {
			// Ready means cairn's search attributes can be queried.
			_, err = c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default", Query: `CairnKind = "backup"`})
			if err == nil {
				t.Cleanup(c.Close)
				return c
			}
			c.Close()
		}
		require.True(t, time.Now().Before(deadline), "Temporal at %s did not come up: %v", addr, err)
		time.Sleep(300 * time.Millisecond)
	}
}

// startWorker starts a `cairn worker` process against the stack.
func (s *stack) startWorker(extra ...string) *proc {
	s.t.Helper()
	args := append([]string{"worker", "--temporal-address", s.temporalAddr, "--kubeconfig", s.cluster.KubeconfigPath()}, extra...)
	return startProc(s.t, "worker", args...)
}

// cli runs the cairn CLI against the stack.
func (s *stack) cli(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	return runCLI(s.t, append(args, "--temporal-address", s.temporalAddr, "--location", s.location)...)
}

// waitPhase polls a backup until cond holds, failing after timeout.
func (s *stack) waitBackup(name string, timeout time.Duration, cond func(*starter.BackupView) bool) *starter.BackupView {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := s.starter.GetBackup(context.Background(), name)
		if err == nil && cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("backup %s: condition not reached in %s (last: %+v, err %v)", name, timeout, v, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitDone waits until a backup has ended and its status is read: a
// status query that a busy worker answers late is asked again, never
// taken for the verdict.
func (s *stack) waitDone(name string, timeout time.Duration) *starter.BackupView {
	return s.waitBackup(name, timeout, func(v *starter.BackupView) bool {
		return v.Phase.Done() && v.Status != nil && v.Status.CompletionTime != nil
	})
}

// quietLogger drops the SDK's client logs in tests.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
