package extcall

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
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
