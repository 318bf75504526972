package cluster

import (
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// surface lifts a non-retryable application error wrapped inside err (say
// "list configmaps: <ClusterUnreachable>") to the top, keeping the full
// message. The SDK classifies only the outermost error: left wrapped, the
// failure would be a retryable "wrapError" and retried forever.
func surface(err error) error {
	var appErr *temporal.ApplicationError
	if err == nil || !errors.As(err, &appErr) || !appErr.NonRetryable() {
		return err
	}
	if top, ok := err.(*temporal.ApplicationError); ok && top == appErr {
		return err
	}
	// The wrapping text with the inner message, not the inner Error(),
	// which appends "(type: ..., retryable: false)".
	msg := strings.Replace(err.Error(), appErr.Error(), appErr.Message(), 1)
	return temporal.NewNonRetryableApplicationError(msg, appErr.Type(), nil)
}
