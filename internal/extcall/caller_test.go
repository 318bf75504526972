package extcall

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestCallFailureFailsItemsOfAClosedCall: a call stopped without an
// answer fails its items; Temporal out of reach, or the step's own end,
// is for the step to retry.
func TestCallFailureFailsItemsOfAClosedCall(t *testing.T) {
	ctx := context.Background()
	for name, err := range map[string]error{
		"canceled":  temporal.NewCanceledError(),
		"timed out": temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil),
	} {
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, callFailure(ctx, "extension/b/x/k", err), &appErr, name)
		assert.Equal(t, v1alpha1.ErrTypeExtension, appErr.Type(), name)
		assert.Contains(t, appErr.Message(), "its call extension/b/x/k ended without an answer", name)
	}
	unreachable := errors.New("connection refused")
	assert.Equal(t, unreachable, callFailure(ctx, "id", unreachable))
	done, cancel := context.WithCancel(ctx)
	cancel()
	assert.IsType(t, &temporal.CanceledError{}, callFailure(done, "id", temporal.NewCanceledError()), "the step's own end is not the extension's")
}

// fakeTemporal serves calls: as standalone activities unless it has none
// (a server before them), then as workflows.
type fakeTemporal struct {
	client.Client
	noStandalone bool
	// running are the IDs of calls started before; a start under one of
	// them is refused, as Temporal does.
	running    map[string]bool
	activities []string // IDs started as standalone activities
	workflows  []string // IDs started as workflows
	end        error    // how each call ends; nil: it answers
	refused    int      // standalone starts refused
}

type fakeHandle struct {
	client.ActivityHandle
	end error
}

func (h fakeHandle) Get(_ context.Context, out any) error {
	if h.end != nil {
		return h.end
	}
	*out.(*json.RawMessage) = json.RawMessage(`{"items":[]}`)
	return nil
}

type fakeRun struct{ client.WorkflowRun }

func (fakeRun) Get(_ context.Context, out any) error {
	*out.(*json.RawMessage) = json.RawMessage(`{"items":["from a workflow"]}`)
	return nil
}

func (f *fakeTemporal) ExecuteActivity(_ context.Context, opts client.StartActivityOptions, _ any, _ ...any) (client.ActivityHandle, error) {
	switch {
	case f.noStandalone:
		f.refused++
		return nil, serviceerror.NewUnimplemented("Standalone activity is disabled")
	case f.running[opts.ID]:
		return nil, serviceerror.NewActivityExecutionAlreadyStarted("started", "", "")
	}
	f.activities = append(f.activities, opts.ID)
	return fakeHandle{end: f.end}, nil
}

func (f *fakeTemporal) GetActivityHandle(client.GetActivityHandleOptions) client.ActivityHandle {
	return fakeHandle{end: f.end}
}

func (f *fakeTemporal) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.workflows = append(f.workflows, opts.ID)
	return fakeRun{}, nil
}

// TestCallRunsAsAStandaloneActivity: a call is one standalone activity;
// a retried step finds the one it started instead of starting another; a
// call that ends without an answer fails its items with the reason; a
// server without standalone activities runs the call as a workflow.
func TestCallRunsAsAStandaloneActivity(t *testing.T) {
	ctx := context.Background()
	in := v1alpha1.ExtensionCallInput{Run: "b", Extension: "x", TaskQueue: "x-queue", Activity: "cairn.extension.v1.BackupItems"}
	f := &fakeTemporal{running: map[string]bool{}}
	answer, err := (&TemporalCaller{Client: f}).Call(ctx, "extension/b/x/1", in)
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":[]}`, string(answer))
	assert.Equal(t, []string{"extension/b/x/1"}, f.activities)

	f.running["extension/b/x/1"] = true
	_, err = (&TemporalCaller{Client: f}).Call(ctx, "extension/b/x/1", in)
	require.NoError(t, err)
	assert.Len(t, f.activities, 1, "the retry found the call it made")

	f.end = temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)
	_, err = (&TemporalCaller{Client: f}).Call(ctx, "extension/b/x/2", in)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, v1alpha1.ErrTypeExtension, appErr.Type())
	assert.Equal(t, "did not answer cairn.extension.v1.BackupItems within 10m0s: is a worker polling task queue x-queue?", appErr.Message())

	old := &fakeTemporal{noStandalone: true}
	caller := &TemporalCaller{Client: old}
	for _, id := range []string{"extension/b/x/3", "extension/b/x/4"} {
		answer, err = caller.Call(ctx, id, in)
		require.NoError(t, err)
		assert.JSONEq(t, `{"items":["from a workflow"]}`, string(answer))
	}
	assert.Equal(t, []string{"extension/b/x/3", "extension/b/x/4"}, old.workflows)
	assert.Equal(t, 1, old.refused, "asked once for a standalone activity, then remembered")
}
