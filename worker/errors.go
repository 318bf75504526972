package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/sealing"
)

// errorSurfacer makes every activity's non-retryable errors count as
// such, however the activity wrapped them with context on the way out.
type errorSurfacer struct {
	interceptor.WorkerInterceptorBase
}

func (*errorSurfacer) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &surfacingActivity{}
	i.Next = next
	return i
}

type surfacingActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *surfacingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	return res, surface(unaskedCancel(ctx, err))
}

// unaskedCancel turns an activity's cancellation that Temporal did not
// ask for into a failure of its own. The SDK cancels an activity's
// context itself when its heartbeats keep failing for a whole heartbeat
// timeout (a Temporal too busy to answer). An activity that then reports
// itself canceled fails with a cancel as its cause, which the workflows
// (temporal.IsCanceledError) took for a user's cancel: a data mover's
// upload was left out of a Completed backup, where the step needed
// another attempt. Pauses and resets asked for by Temporal stay as they
// are.
func unaskedCancel(ctx context.Context, err error) error {
	if err == nil || !temporal.IsCanceledError(err) || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if temporal.IsCanceledError(cause) || errors.Is(cause, activity.ErrActivityPaused) || errors.Is(cause, activity.ErrActivityReset) {
		return err
	}
	return temporal.NewApplicationError(fmt.Sprintf("stopped without a cancel request (%v); the next attempt carries on", cause),
		v1alpha1.ErrTypeActivityStopped)
}

// surface lifts a non-retryable application error wrapped inside err (say
// "list configmaps: <ClusterUnreachable>") to the top, keeping the full
// message. The SDK classifies only the outermost error: left wrapped, the
// failure would be a retryable "wrapError" and retried forever.
//
// An object that cannot be read as stored, for want of its key, because
// it fails authentication or because it differs from the backup's
// manifest, is made non-retryable here too, whichever activity read it:
// EncryptionKey or CorruptBackup.
func surface(err error) error {
	var appErr *temporal.ApplicationError
	var keyErr *sealing.KeyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &appErr) && appErr.NonRetryable():
	case errors.As(err, &keyErr):
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeEncryptionKey, nil)
	case errors.Is(err, sealing.ErrCorrupt), errors.Is(err, location.ErrChecksum):
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeCorruptBackup, nil)
	default:
		return err
	}
	// Is the application error err itself, not one it wraps?
	if top, ok := err.(*temporal.ApplicationError); ok && top == appErr { //nolint:errorlint
		return err
	}
	// The wrapping text with the inner message, not the inner Error(),
	// which appends "(type: ..., retryable: false)".
	msg := strings.Replace(err.Error(), appErr.Error(), appErr.Message(), 1)
	return temporal.NewNonRetryableApplicationError(msg, appErr.Type(), nil)
}
