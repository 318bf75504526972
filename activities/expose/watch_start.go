package expose

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// defaultStartWatchInterval is how often WatchDataMoverStart looks: a
// GET of one pod, and the answer's wait is the data mover's start.
const defaultStartWatchInterval = time.Second

// WatchDataMoverStart looks at the attempt's data mover until it runs,
// or until it is clear it never will: an image the node cannot pull, a
// pod or process that ended first. The workflow races it against the
// data mover's task, so such an attempt fails when it happens instead of
// at the prepare timeout (30 minutes by default). A look that fails is
// the activity's error, retried; ctx ends it once the task started.
func (a *Activities) WatchDataMoverStart(ctx context.Context, in v1alpha1.ExposeInput) (*v1alpha1.StartWatchResult, error) {
	t := a.target(in)
	interval := a.StartWatchInterval
	if interval <= 0 {
		interval = defaultStartWatchInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := a.Exposer.StartState(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("watch the data mover of %s: %w", in.Volume.Key(), err)
		}
		if st.Running {
			return &st, nil
		}
		if st.Never != "" {
			return a.neverStarts(ctx, in, st)
		}
		activity.RecordHeartbeat(ctx)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// neverStarts reports, in the owner's log, a data mover that cannot
// start.
func (a *Activities) neverStarts(ctx context.Context, in v1alpha1.ExposeInput, st v1alpha1.StartWatchResult) (*v1alpha1.StartWatchResult, error) {
	run, err := a.start(ctx, in)
	if err != nil {
		return nil, err
	}
	defer run.End()
	run.Log.Warn("Data mover cannot start", zap.String("volume", in.Volume.Key()), zap.Int("attempt", in.Attempt),
		zap.String("reason", st.Never), zap.Bool("newDataMoverMayStart", st.Retry))
	return &st, nil
}
