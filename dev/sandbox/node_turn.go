package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// nodeTurnPath is the lock that programs running several node sandboxes
// one after another take turns on (see TakeNodeTurn). It is not the lock
// Start takes, which fails at once when a node runs.
const nodeTurnPath = "/run/cairn-sandbox-node-turn.lock"

// TakeNodeTurn waits until no other holder of the machine's node turn is
// left, then holds it until release is called or this process dies. Only
// one sandbox per machine may run a node, so tests in several packages that
// run in parallel (or several test processes) take the turn before they
// start a node, and keep it while they look at what a node leaves on the
// host. Holders in one process exclude each other too: each holds its own
// open file, and flock locks belong to the open file.
func TakeNodeTurn(ctx context.Context) (release func(), err error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		unlock, err := tryLockFile(nodeTurnPath)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sandbox: waiting for the node turn (%s): %w", nodeTurnPath, ctx.Err())
		case <-tick.C:
		}
	}
}
