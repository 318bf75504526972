package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

type heartbeatTimeoutKey struct{}

// WithHeartbeatTimeout gives the runs of a worker the heartbeat timeout of
// the activities no request sets one for: schedules, retention,
// deletions, verification, maintenance, etcd snapshots and data mover
// slots. The worker sets it from its options on every workflow it runs.
// Activity options are not compared on replay, so a worker restarted with
// another value replays old runs unchanged.
func WithHeartbeatTimeout(ctx workflow.Context, d time.Duration) workflow.Context {
	return workflow.WithValue(ctx, heartbeatTimeoutKey{}, d)
}

// HeartbeatTimeout is the heartbeat timeout WithHeartbeatTimeout set, or
// DefaultHeartbeatTimeout.
func HeartbeatTimeout(ctx workflow.Context) time.Duration {
	if d, ok := ctx.Value(heartbeatTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return v1alpha1.DefaultHeartbeatTimeout
}
