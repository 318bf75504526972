package cluster

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/kube"
)

// Reachability tracks how long the API server has been unreachable. It is
// part of an activity's heartbeat details, so the clock survives a worker
// restart and the Temporal UI shows the last error of a waiting activity.
type Reachability struct {
	UnreachableSince *time.Time `json:"unreachableSince,omitempty"`
	LastError        string     `json:"lastError,omitempty"`
}

// Do calls fn, retrying with backoff while the API server is unreachable,
// for at most timeout since it was first found unreachable. Any other
// error is returned as is.
func (r *Reachability) Do(ctx context.Context, timeout time.Duration, log *zap.Logger, heartbeat func(), fn func() error) error {
	backoff := time.Second
	for {
		err := fn()
		if err == nil || !kube.IsUnreachable(err) {
			if r.UnreachableSince != nil {
				log.Info("API server reachable again", zap.Duration("after", time.Since(*r.UnreachableSince)))
			}
			r.UnreachableSince, r.LastError = nil, ""
			return err
		}
		now := time.Now().UTC()
		if r.UnreachableSince == nil {
			r.UnreachableSince = &now
		}
		r.LastError = err.Error()
		down := now.Sub(*r.UnreachableSince)
		if down >= timeout {
			msg := fmt.Sprintf("the Kubernetes API server has been unreachable for %s (limit %s): %v", down.Round(time.Second), timeout, err)
			return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeClusterUnreachable, err)
		}
		heartbeat()
		log.Warn("API server unreachable, retrying", zap.Error(err), zap.Duration("for", down.Round(time.Second)), zap.Duration("backoff", backoff))
		if err := clock.Sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(backoff*2, 30*time.Second)
		heartbeat()
	}
}
