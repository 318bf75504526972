package flowtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/workflows"
)

// RequireInvalidOptions requires err to be a run's refusal of its options
// for good, naming want.
func RequireInvalidOptions(t *testing.T, err error, want string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, workflows.ErrTypeInvalidSpec, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, app.Error(), want)
}
