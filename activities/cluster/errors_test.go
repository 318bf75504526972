package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"
)

func TestSurfaceLiftsWrappedNonRetryableError(t *testing.T) {
	inner := temporal.NewNonRetryableApplicationError("API server unreachable for 10m", "ClusterUnreachable", nil)
	got := surface(fmt.Errorf("list configmaps: %w", inner))
	var appErr *temporal.ApplicationError
	if assert.True(t, errors.As(got, &appErr)) {
		assert.Same(t, got, error(appErr), "the application error must be the outermost error")
		assert.True(t, appErr.NonRetryable())
		assert.Equal(t, "ClusterUnreachable", appErr.Type())
		assert.Equal(t, "list configmaps: API server unreachable for 10m", appErr.Message())
	}

	plain := errors.New("connection reset")
	assert.Same(t, plain, surface(plain), "other errors stay retryable as they are")
	assert.Same(t, error(inner), surface(inner))
	assert.Nil(t, surface(nil))
}
