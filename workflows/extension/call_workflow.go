package extension

import (
	"encoding/json"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// CallWorkflow runs in.Activity on the extension's task queue with
// in.Request and returns its answer as JSON: how a call runs on a
// Temporal server without standalone activities. The call is retried until
// the registration's timeout, which also bounds the wait for a worker to
// poll the queue; an extension's non-retryable error ends it at once.
func CallWorkflow(ctx workflow.Context, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	timeout := in.CallTimeout()
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.TaskQueue,
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		RetryPolicy:            v1alpha1.ExtensionCallRetryPolicy(),
	})
	var answer json.RawMessage
	err := workflow.ExecuteActivity(ctx, in.Activity, in.Request).Get(ctx, &answer)
	if err == nil {
		return answer, nil
	}
	return nil, temporal.NewNonRetryableApplicationError(in.CallFailure(err), v1alpha1.ErrTypeExtension, nil)
}
