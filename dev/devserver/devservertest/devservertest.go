// Package devservertest starts an embedded Temporal server for a test.
package devservertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap/zaptest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/devserver"
	"github.com/cairn-backup/cairn/starter"
)

// Start starts an embedded Temporal server on 127.0.0.1 with cairn's
// search attributes on namespace "default", stopped when the test ends,
// and returns a client on it. It skips the test under -short.
func Start(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Temporal server")
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range v1alpha1.SearchAttributeNames() {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	srv, err := devserver.Start(context.Background(), devserver.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0",
		Namespace: "default", SearchAttributes: attrs, Log: zaptest.NewLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// StarterClient starts an embedded Temporal server as Start does, with no
// worker, and returns a starter client on it, which waits for no worker
// (validation and status queries give up at once), and the Temporal
// client under it.
func StarterClient(t *testing.T) (*starter.Client, client.Client) {
	t.Helper()
	tc := Start(t)
	c := starter.New(tc, starter.Options{Namespace: "default", DefaultLocation: "file://" + t.TempDir(),
		ValidationTimeout: 200 * time.Millisecond, StatusQueryTimeout: 200 * time.Millisecond})
	return c, tc
}
