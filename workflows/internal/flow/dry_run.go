package flow

import (
	"go.temporal.io/sdk/workflow"
)

// DiscardDryRun runs discard (an activity removing a dry run's scratch
// data) on a context disconnected from ctx, so it runs however the dry
// run ended; it returns that context and runErr, or discard's error when
// the run itself succeeded.
func DiscardDryRun(ctx workflow.Context, opts workflow.ActivityOptions, discard, scratch any, runErr error) (workflow.Context, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, opts)
	if err := workflow.ExecuteActivity(actx, discard, scratch).Get(dctx, nil); err != nil && runErr == nil {
		runErr = err
	}
	return dctx, runErr
}
