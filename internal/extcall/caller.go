// Package extcall calls extensions for the activities that have items
// for them: each call an activity of its own on the extension's task
// queue (a standalone activity, or an ExtensionCall workflow on a
// Temporal server without them), found again by its ID when a step is
// retried.
package extcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Caller runs one call of an extension and returns its answer: started
// once under id however often a retried step asks (see TemporalCaller).
type Caller interface {
	Call(ctx context.Context, id string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error)
}

// TemporalCaller calls extensions through Temporal. Share one: it
// remembers a server without standalone activities.
type TemporalCaller struct {
	Client       client.Client
	noStandalone atomic.Bool
}

// Call runs the call as a standalone activity under id on the
// extension's task queue, or finds the one a previous attempt started
// (running or ended: its ID is never reused), and waits for its answer.
// A standalone activity is one activity task and its payloads once; a
// workflow around the activity, what a Temporal server without them
// runs, costs twice that.
func (t *TemporalCaller) Call(ctx context.Context, id string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	var answer json.RawMessage
	if !t.noStandalone.Load() {
		var err error
		answer, err = t.callActivity(ctx, id, in)
		var unimplemented *serviceerror.Unimplemented
		if !errors.As(err, &unimplemented) {
			return answer, err
		}
		t.noStandalone.Store(true)
	}
	if err := startOrFind(ctx, t.Client, id, v1alpha1.KindExtensionCall, in.Run, v1alpha1.ExtensionCallWorkflowName, in, &answer); err != nil {
		return nil, callFailure(ctx, id, err)
	}
	return answer, nil
}

// callActivity runs the call as a standalone activity. Its error is the
// start's when the server has no standalone activities (Unimplemented),
// a non-retryable one saying why when the call ended without an answer,
// or Temporal out of reach, which the step retries.
func (t *TemporalCaller) callActivity(ctx context.Context, id string, in v1alpha1.ExtensionCallInput) (json.RawMessage, error) {
	timeout := in.CallTimeout()
	opts := client.StartActivityOptions{
		ID:                       id,
		TaskQueue:                in.TaskQueue,
		ScheduleToCloseTimeout:   timeout,
		StartToCloseTimeout:      timeout,
		RetryPolicy:              v1alpha1.ExtensionCallRetryPolicy(),
		ActivityIDReusePolicy:    enumspb.ACTIVITY_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ActivityIDConflictPolicy: enumspb.ACTIVITY_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindExtensionCall), v1alpha1.SearchAttrName.ValueSet(in.Run)),
		Summary:                  fmt.Sprintf("extension %s for %s", in.Extension, in.Run),
	}
	h, err := t.Client.ExecuteActivity(ctx, opts, in.Activity, in.Request)
	var started *serviceerror.ActivityExecutionAlreadyStarted
	switch {
	case errors.As(err, &started):
		h = t.Client.GetActivityHandle(client.GetActivityHandleOptions{ActivityID: id})
	case err != nil:
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	var answer json.RawMessage
	err = h.Get(ctx, &answer)
	switch {
	case err == nil:
		return answer, nil
	case ctx.Err() != nil:
		return nil, err
	}
	var appErr *temporal.ApplicationError
	var timedOut *temporal.TimeoutError
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	if errors.As(err, &appErr) || errors.As(err, &timedOut) || errors.As(err, &canceled) || errors.As(err, &terminated) {
		return nil, temporal.NewNonRetryableApplicationError(in.CallFailure(err), v1alpha1.ErrTypeExtension, nil)
	}
	return nil, err
}

// startOrFind starts workflow name under id with input in, or finds the
// one started under id before (running or ended: IDs of calls and
// operations are never reused), and waits for its result into out. Its
// error is the workflow's, or a failed start.
func startOrFind(ctx context.Context, c client.Client, id, kind, run, name string, in, out any) error {
	opts := client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             v1alpha1.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(v1alpha1.SearchAttrKind.ValueSet(kind), v1alpha1.SearchAttrName.ValueSet(run)),
	}
	wr, err := c.ExecuteWorkflow(ctx, opts, name, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started):
		wr = c.GetWorkflow(ctx, id, "")
	case err != nil:
		return fmt.Errorf("start %s: %w", id, err)
	}
	return wr.Get(ctx, out)
}

// callFailure tells a call that ended without an answer, which fails its
// items, from Temporal out of reach, which the step retries. The call's
// own application error says why; a call terminated, canceled or timed
// out (an operator stopped a stuck one) never answers, and as its ID is
// never reused every retry would find it closed again.
func callFailure(ctx context.Context, id string, err error) error {
	var (
		appErr     *temporal.ApplicationError
		terminated *temporal.TerminatedError
		canceled   *temporal.CanceledError
		timedOut   *temporal.TimeoutError
	)
	switch {
	case errors.As(err, &appErr):
		return appErr
	case ctx.Err() != nil:
		return err
	case errors.As(err, &terminated), errors.As(err, &canceled), errors.As(err, &timedOut):
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("its call %s ended without an answer: %v", id, err), v1alpha1.ErrTypeExtension, nil)
	}
	return err
}
