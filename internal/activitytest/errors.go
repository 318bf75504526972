// Package activitytest holds assertions the activity packages' tests
// share.
package activitytest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// RequireNonRetryable asserts err is a non-retryable application error of
// type errType.
func RequireNonRetryable(t *testing.T, err error, errType string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
	assert.True(t, appErr.NonRetryable(), "non-retryable: %v", err)
	assert.Equal(t, errType, appErr.Type())
}

// RequireRetryable asserts err is an error Temporal retries: not a
// non-retryable application error.
func RequireRetryable(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		assert.False(t, appErr.NonRetryable(), "retryable: %v", err)
	}
}
