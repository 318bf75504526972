package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// defaultOperationHeartbeat is an operation's heartbeat timeout when the
// input sets none.
const defaultOperationHeartbeat = time.Minute

// OperationWorkflow runs one operation an extension started
// (BackupOperationV1 on the extension's task queue, RestoreOperationV1
// for a restore's) to its end and
// returns its result as JSON. It is retried until in.Timeout, which also
// bounds the wait for a worker; a worker that dies mid-operation is found
// out by the heartbeat timeout and the next attempt starts with the last
// heartbeat's details. A cancel of this workflow reaches the operation
// at its next heartbeat, and is waited for.
func OperationWorkflow(ctx workflow.Context, in v1alpha1.ExtensionOperationInput) (json.RawMessage, error) {
	timeout := in.Timeout.Duration
	if timeout <= 0 {
		timeout = v1alpha1.DefaultItemOperationTimeout
	}
	heartbeat := in.HeartbeatTimeout.Duration
	if heartbeat <= 0 {
		heartbeat = defaultOperationHeartbeat
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.TaskQueue,
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       heartbeat,
		WaitForCancellation:    true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{extension.ErrTypeRefused}},
	})
	name := extension.BackupOperationV1
	if in.Restore != "" {
		name = extension.RestoreOperationV1
	}
	var result json.RawMessage
	err := workflow.ExecuteActivity(ctx, name, json.RawMessage(in.Request)).Get(ctx, &result)
	switch {
	case err == nil:
		return result, nil
	case temporal.IsCanceledError(err):
		return nil, err
	}
	return nil, temporal.NewNonRetryableApplicationError(operationFailure(in, timeout, err), v1alpha1.ErrTypeExtension, nil)
}

// operationFailure says how an operation ended without a result.
func operationFailure(in v1alpha1.ExtensionOperationInput, timeout time.Duration, err error) string {
	var timeoutErr *temporal.TimeoutError
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &timeoutErr) && errors.As(timeoutErr, &appErr):
		return fmt.Sprintf("operation did not end within %s; its last error: %s", timeout, appErr.Message())
	case errors.As(err, &timeoutErr):
		return fmt.Sprintf("operation did not end within %s (is a worker polling task queue %s, and heartbeating?)", timeout, in.TaskQueue)
	case errors.As(err, &appErr):
		return "operation failed: " + appErr.Message()
	}
	return fmt.Sprintf("operation failed (task queue %s): %v", in.TaskQueue, err)
}
