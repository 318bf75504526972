package extension

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

func runOperation(t *testing.T, fn func(context.Context, extension.BackupOperationRequest) (*extension.BackupOperationResult, error)) (json.RawMessage, error) {
	t.Helper()
	req, err := json.Marshal(extension.BackupOperationRequest{Backup: "b", Extension: "x", OperationID: "export-1", Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	return execute(t, OperationWorkflow, extension.BackupOperationV1, fn,
		v1alpha1.ExtensionOperationInput{Backup: "b", Extension: "x", TaskQueue: "x-queue", Request: req})
}

// TestOperationRetriesThenEnds: the operation gets its request as the
// answer gave it, a passing error is retried, and the result is returned.
func TestOperationRetriesThenEnds(t *testing.T) {
	calls := 0
	out, err := runOperation(t, func(_ context.Context, req extension.BackupOperationRequest) (*extension.BackupOperationResult, error) {
		assert.Equal(t, "export-1", req.OperationID)
		assert.JSONEq(t, `{"n":1}`, string(req.Data))
		if calls++; calls < 2 {
			return nil, errors.New("bucket busy")
		}
		return &extension.BackupOperationResult{Description: "done"}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
	assert.JSONEq(t, `{"description":"done"}`, string(out))
}

// TestOperationRefusedFailsWithTheMessage: a refusal ends the operation
// at once, as a typed error with the extension's message.
func TestOperationRefusedFailsWithTheMessage(t *testing.T) {
	calls := 0
	_, err := runOperation(t, func(context.Context, extension.BackupOperationRequest) (*extension.BackupOperationResult, error) {
		calls++
		return nil, temporal.NewApplicationError("no disk", extension.ErrTypeRefused)
	})
	require.Error(t, err)
	assert.Equal(t, 1, calls)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, v1alpha1.ErrTypeExtension, appErr.Type())
	assert.Equal(t, "operation failed: no disk", appErr.Message())
}

// TestRestoreOperationCallsTheRestoreActivity: a restore's operation runs
// RestoreOperationV1 with its request, not the backup's activity.
func TestRestoreOperationCallsTheRestoreActivity(t *testing.T) {
	req, err := json.Marshal(extension.RestoreOperationRequest{Restore: "r", Backup: "b", Extension: "x", OperationID: "import-1"})
	require.NoError(t, err)
	out, err := execute(t, OperationWorkflow, extension.RestoreOperationV1,
		func(_ context.Context, req extension.RestoreOperationRequest) (*extension.RestoreOperationResult, error) {
			assert.Equal(t, "r", req.Restore)
			return &extension.RestoreOperationResult{Description: "imported " + req.OperationID}, nil
		},
		v1alpha1.ExtensionOperationInput{Backup: "b", Restore: "r", Extension: "x", TaskQueue: "x-queue", Request: req})
	require.NoError(t, err)
	assert.JSONEq(t, `{"description":"imported import-1"}`, string(out))
}
