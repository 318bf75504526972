package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// CallWorkflow runs in.Activity on the extension's task queue with
// in.Request and returns its answer as JSON. The call is retried until
// the registration's timeout, which also bounds the wait for a worker to
// poll the queue; an extension's non-retryable error ends it at once.
func CallWorkflow(ctx workflow.Context, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	timeout := in.Timeout.Duration
	if timeout <= 0 {
		timeout = v1alpha1.DefaultExtensionTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.TaskQueue,
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{extension.ErrTypeRefused}},
	})
	var answer json.RawMessage
	err := workflow.ExecuteActivity(ctx, in.Activity, in.Request).Get(ctx, &answer)
	if err == nil {
		return answer, nil
	}
	return nil, temporal.NewNonRetryableApplicationError(describe(in, timeout, err), v1alpha1.ErrTypeExtension, nil)
}

// describe says what went wrong with a call. The caller names the
// extension; this names its task queue, where an operator looks next.
func describe(in v1alpha1.ExtensionCallInput, timeout time.Duration, err error) string {
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		var last *temporal.ApplicationError
		if timeoutErr.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START && errors.As(timeoutErr, &last) {
			return fmt.Sprintf("did not answer %s within %s; its last error: %s", in.Activity, timeout, last.Message())
		}
		if timeoutErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START || timeoutErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE {
			return fmt.Sprintf("did not answer %s within %s: is a worker polling task queue %s?", in.Activity, timeout, in.TaskQueue)
		}
		return fmt.Sprintf("did not answer %s within %s (task queue %s)", in.Activity, timeout, in.TaskQueue)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return fmt.Sprintf("refused %s: %s", in.Activity, appErr.Message())
	}
	return fmt.Sprintf("%s (task queue %s): %v", in.Activity, in.TaskQueue, err)
}
