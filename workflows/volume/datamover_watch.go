package volume

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// versionWatchStart marks the runs that watch each data mover until it
// runs, beside its task.
const versionWatchStart = "watch-data-mover-start"

// runTask runs the attempt's task on its data mover, tctx holding the
// task's options. Beside it, a watcher looks at the data mover until it
// runs: one that never will (an image the node cannot pull, a pod or
// process that ended first) fails the attempt when that shows, instead
// of at the prepare timeout, and its task, which no data mover took, is
// canceled.
func (m *dataMove) runTask(ctx, tctx workflow.Context, in v1alpha1.ExposeInput, task moverTask) error {
	if workflow.GetVersion(ctx, versionWatchStart, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.ExecuteActivity(tctx, task.activity, task.input).Get(ctx, task.result)
	}
	taskCtx, cancelTask := workflow.WithCancel(tctx)
	defer cancelTask()
	taskF := workflow.ExecuteActivity(taskCtx, task.activity, task.input)

	wctx, cancelWatch := workflow.WithCancel(ctx)
	defer cancelWatch()
	watchF := workflow.ExecuteActivity(workflow.WithActivityOptions(wctx, m.prepareOptions()), exposeActs.WatchDataMoverStart, in)

	var verdict v1alpha1.StartWatchResult
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(taskF, func(workflow.Future) {})
	sel.AddFuture(watchF, func(f workflow.Future) {
		// A watcher that failed leaves the prepare timeout to decide.
		if err := f.Get(ctx, &verdict); err != nil {
			m.logger.Warn("Watching the data mover failed; its task's timeouts decide", "attempt", in.Attempt, "error", err)
		}
	})
	sel.Select(ctx)
	if verdict.Never == "" || taskF.IsReady() {
		return taskF.Get(ctx, task.result)
	}
	cancelTask()
	// A data mover that took the task after all (a pod that ran it and
	// then ended) decides the attempt with its answer.
	if err := taskF.Get(ctx, task.result); err == nil {
		return nil
	}
	// The watcher logged the verdict; run logs the attempt's end.
	msg := fmt.Sprintf("the data mover of attempt %d cannot start: %s", in.Attempt, verdict.Never)
	if verdict.Retry {
		return temporal.NewApplicationError(msg, v1alpha1.ErrTypeDataMoverNotStarted)
	}
	return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeDataMoverNotStarted, nil)
}
