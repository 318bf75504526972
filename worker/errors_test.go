package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/sealing"
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

func TestWorkerSurfacesWrappedErrorsOfEveryActivity(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&errorSurfacer{}}})
	wrapping := func(context.Context) error {
		inner := temporal.NewNonRetryableApplicationError("unreachable for 10m", "ClusterUnreachable", nil)
		return fmt.Errorf("get persistentvolumes pv-1: %w", inner)
	}
	env.RegisterActivity(wrapping)
	_, err := env.ExecuteActivity(wrapping)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "got %v", err)
	assert.True(t, appErr.NonRetryable(), "the activity's failure must be non-retryable")
	assert.Equal(t, "ClusterUnreachable", appErr.Type())
	assert.Equal(t, "get persistentvolumes pv-1: unreachable for 10m", appErr.Message())
}

func TestSurfaceMakesUnreadableEncryptedObjectsNonRetryable(t *testing.T) {
	file, err := sealing.Generate()
	require.NoError(t, err)
	keys, err := sealing.ParseKeyring(file)
	require.NoError(t, err)
	var sealed bytes.Buffer
	w, err := keys.Seal(&sealed)
	require.NoError(t, err)
	_, err = w.Write(bytes.Repeat([]byte("secret"), 100000))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	_, keyErr := sealing.Open(bytes.NewReader(sealed.Bytes()), nil)
	got := surface(fmt.Errorf("read backups/b/resources.tar.gz: %w", keyErr))
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, got, &appErr)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, v1alpha1.ErrTypeEncryptionKey, appErr.Type())
	assert.Contains(t, appErr.Message(), "backups/b/resources.tar.gz")

	flipped := bytes.Clone(sealed.Bytes())
	flipped[len(flipped)-10] ^= 1
	r, err := sealing.Open(bytes.NewReader(flipped), keys)
	require.NoError(t, err)
	_, readErr := io.ReadAll(r)
	require.ErrorAs(t, surface(fmt.Errorf("restore: %w", readErr)), &appErr)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, v1alpha1.ErrTypeCorruptBackup, appErr.Type())
}

func TestCancelsTemporalDidNotAskForAreRetried(t *testing.T) {
	canceledBy := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	stopped := temporal.NewCanceledError("upload canceled")

	err := unaskedCancel(canceledBy(errors.New("record heartbeat: context deadline exceeded")), stopped)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "got %v", err)
	assert.False(t, temporal.IsCanceledError(err), "no longer a cancellation")
	assert.False(t, appErr.NonRetryable(), "retried")
	assert.Equal(t, v1alpha1.ErrTypeActivityStopped, appErr.Type())
	assert.Contains(t, appErr.Message(), "context deadline exceeded")

	for name, ctx := range map[string]context.Context{
		"asked by Temporal": canceledBy(temporal.NewCanceledError()),
		"paused":            canceledBy(activity.ErrActivityPaused),
		"reset":             canceledBy(activity.ErrActivityReset),
		"not canceled":      context.Background(),
	} {
		assert.Same(t, error(stopped), unaskedCancel(ctx, stopped), name)
	}
	plain := errors.New("disk full")
	assert.Same(t, plain, unaskedCancel(canceledBy(errors.New("x")), plain), "other errors stay")
}
