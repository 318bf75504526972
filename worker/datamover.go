package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/activities/datamover"
)

// DataMoverConfig is what a data mover process needs.
type DataMoverConfig struct {
	// TaskQueue is the one volume operation's queue.
	TaskQueue  string
	Activities *datamover.Activities
	// IdleTimeout ends a data mover that got no task this long after it
	// started (its operation was canceled or moved on).
	IdleTimeout time.Duration
	Log         *zap.Logger
}

// RunDataMover polls the operation's task queue until it has run one
// task, ctx ends, or it waited IdleTimeout for one. One data mover serves
// one attempt: the workflow starts a fresh one for a retry.
func RunDataMover(ctx context.Context, c client.Client, cfg DataMoverConfig) error {
	once := &onceDone{done: make(chan struct{})}
	w := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: 1,
		// Lets the finished task's result reach Temporal before exit.
		WorkerStopTimeout: 30 * time.Second,
		// Heartbeats are how a data mover's death is noticed; the SDK's
		// default sends them at 80% of the timeout, which leaves a loaded
		// node little slack.
		MaxHeartbeatThrottleInterval: 2 * time.Second,
		Interceptors:                 []interceptor.WorkerInterceptor{&errorSurfacer{}, once},
	})
	registerDataMover(w, cfg.Activities)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start data mover: %w", err)
	}
	defer w.Stop()
	cfg.Log.Info("Data mover polling", zap.String("taskQueue", cfg.TaskQueue), zap.String("path", cfg.Activities.Path))
	idle := time.NewTimer(cfg.IdleTimeout)
	defer idle.Stop()
	select {
	case <-ctx.Done():
		cfg.Log.Info("Data mover stopping")
	case <-once.done:
		cfg.Log.Info("Data mover done")
	case <-idle.C:
		if !once.started() {
			cfg.Log.Warn("No task came; data mover exiting", zap.Duration("idleTimeout", cfg.IdleTimeout))
			return nil
		}
		<-once.done
	}
	return nil
}

// onceDone closes done when the first activity ends.
type onceDone struct {
	interceptor.WorkerInterceptorBase
	done  chan struct{}
	once  sync.Once
	began atomic.Bool
}

func (o *onceDone) started() bool { return o.began.Load() }

func (o *onceDone) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &onceActivity{o: o}
	i.Next = next
	return i
}

type onceActivity struct {
	interceptor.ActivityInboundInterceptorBase
	o *onceDone
}

func (a *onceActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.o.began.Store(true)
	defer a.o.once.Do(func() { close(a.o.done) })
	return a.Next.ExecuteActivity(ctx, in)
}
