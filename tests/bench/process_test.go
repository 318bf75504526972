package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process that dies ends the bench's waits at once, with its log's end;
// one the bench stops itself does not.
func TestWatchedEndsWaitsWhenAProcessDies(t *testing.T) {
	dir := t.TempDir()
	dying, err := startProcess(filepath.Join(dir, "dying.log"), "/bin/sh", "-c", "echo refusing to start: no key; exit 3")
	require.NoError(t, err)
	ctx, cancel := watched(context.Background(), dying)
	defer cancel()
	<-ctx.Done()
	cause := context.Cause(ctx)
	assert.ErrorContains(t, cause, "exit status 3")
	assert.ErrorContains(t, cause, "refusing to start: no key")

	assert.Error(t, dying.unaskedExit())

	stopped, err := startProcess(filepath.Join(dir, "stopped.log"), "/bin/sleep", "600")
	require.NoError(t, err)
	stopped.stop()
	assert.NoError(t, stopped.unaskedExit(), "stopped by the bench: not a failure")
}
