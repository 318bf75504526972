package extension

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

func run(t *testing.T, fn func(context.Context, extension.BackupItemsRequest) (*extension.BackupItemsResponse, error)) (json.RawMessage, error) {
	t.Helper()
	req, err := json.Marshal(extension.BackupItemsRequest{Backup: "b", Extension: "x", Items: []json.RawMessage{[]byte(`{"kind":"ConfigMap"}`)}})
	require.NoError(t, err)
	return execute(t, CallWorkflow, extension.BackupItemsV1, fn, v1alpha1.ExtensionCallInput{Run: "b", Extension: "x", TaskQueue: "x-queue",
		Activity: extension.BackupItemsV1, Request: req})
}

// execute runs workflow wf with input in a test environment where fn
// serves the extension's activity of that name, and returns its result.
func execute(t *testing.T, wf any, activityName string, fn, input any) (json.RawMessage, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(wf)
	env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: activityName})
	env.ExecuteWorkflow(wf, input)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var out json.RawMessage
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, nil
}

func TestCallReturnsTheAnswer(t *testing.T) {
	out, err := run(t, func(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		return &extension.BackupItemsResponse{Items: []extension.BackupItemAnswer{{Item: req.Items[0]}}}, nil
	})
	require.NoError(t, err)
	var resp extension.BackupItemsResponse
	require.NoError(t, json.Unmarshal(out, &resp))
	assert.JSONEq(t, `{"kind":"ConfigMap"}`, string(resp.Items[0].Item))
}

// TestCallRetriesThenAnswers: an extension's passing error is retried.
func TestCallRetriesThenAnswers(t *testing.T) {
	calls := 0
	out, err := run(t, func(context.Context, extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		if calls++; calls < 3 {
			return nil, errors.New("warming up")
		}
		return &extension.BackupItemsResponse{Items: []extension.BackupItemAnswer{{}}}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, calls)
	assert.JSONEq(t, `{"items":[{}]}`, string(out))
}

// TestCallRefusedIsNotRetried: a refusal ends the call at once, as a
// typed error that says what the extension said.
func TestCallRefusedIsNotRetried(t *testing.T) {
	calls := 0
	_, err := run(t, func(context.Context, extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		calls++
		return nil, temporal.NewNonRetryableApplicationError("no widgets here", extension.ErrTypeRefused, nil)
	})
	require.Error(t, err)
	assert.Equal(t, 1, calls)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, v1alpha1.ErrTypeExtension, appErr.Type())
	assert.Equal(t, "refused cairn.extension.v1.BackupItems: no widgets here", appErr.Message())
}

// TestCallRefusalTypeIsNeverRetried: an error of the contract's refusal
// type ends the call even when the extension did not mark it
// non-retryable.
func TestCallRefusalTypeIsNeverRetried(t *testing.T) {
	calls := 0
	_, err := run(t, func(context.Context, extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		calls++
		return nil, temporal.NewApplicationError("not mine", extension.ErrTypeRefused)
	})
	require.Error(t, err)
	assert.Equal(t, 1, calls)
}
