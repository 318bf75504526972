package starter_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/dev/devserver/devservertest"
	"github.com/cairn-backup/cairn/starter"
)

// realTemporal starts an embedded Temporal server with cairn's search
// attributes and no worker, and returns a starter client on it (which
// waits for no worker: validation and status queries give up at once)
// and the Temporal client under it.
func realTemporal(t *testing.T) (*starter.Client, client.Client) {
	t.Helper()
	tc := devservertest.Start(t)
	c := starter.New(tc, starter.Options{Namespace: "default", DefaultLocation: "file://" + t.TempDir(),
		ValidationTimeout: 200 * time.Millisecond, StatusQueryTimeout: 200 * time.Millisecond})
	return c, tc
}
