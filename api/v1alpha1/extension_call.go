package v1alpha1

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// CallTimeout bounds a call, retries and the wait for a worker included:
// the registration's timeout, or the default.
func (in ExtensionCallInput) CallTimeout() time.Duration {
	if in.Timeout.Duration <= 0 {
		return DefaultExtensionTimeout
	}
	return in.Timeout.Duration
}

// ExtensionCallRetryPolicy retries a call that failed until its timeout;
// an extension's refusal ends it at once.
func ExtensionCallRetryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		NonRetryableErrorTypes: []string{extension.ErrTypeRefused}}
}

// CallFailure says what went wrong with a call that ended without an
// answer. The caller names the extension; this names its task queue,
// where an operator looks next.
func (in ExtensionCallInput) CallFailure(err error) string {
	timeout := in.CallTimeout()
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
