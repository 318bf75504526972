package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/stretchr/testify/require"
)

// startFakeGCS starts fake-gcs-server (built by `make test` from
// tools/fakegcs) on 127.0.0.1 and points this process at it
// (STORAGE_EMULATOR_HOST, which Google's client, gocloud.dev and kopia
// all honour, unauthenticated). It returns the environment that points
// the processes the test starts there too. Only gs:// locations read
// the variable, and only this test opens one, so setting it does not
// touch the tests that run beside it.
func startFakeGCS(t *testing.T) (env []string) {
	t.Helper()
	bin := os.Getenv("CAIRN_FAKE_GCS")
	if bin == "" {
		bin = filepath.Join("..", "..", ".cache", "tools", "fake-gcs-server")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "fake-gcs-server is missing: `make test` builds it")
	addr := freePort(t)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p := startBinary(t, "fake-gcs-server", bin, nil, "-scheme", "http", "-host", host, "-port", port, "-backend", "filesystem",
		"-filesystem-root", t.TempDir(), "-public-host", addr, "-external-url", "http://"+addr, "-log-level", "warn")
	os.Setenv("STORAGE_EMULATOR_HOST", addr)
	waitServing(t, p, listening(addr))
	return []string{"STORAGE_EMULATOR_HOST=" + addr}
}

// gcsBucket creates a bucket on the emulator and returns its location URL.
func gcsBucket(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	c, err := storage.NewClient(ctx)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Bucket(name).Create(ctx, "cairn-test", nil))
	return "gs://" + name
}
