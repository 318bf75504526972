package datamover

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestMarkersOfARestoredPod: a marker is a world-readable file named for
// its volume, in the marker directory only, bounded in size; a name
// that would leave the directory, or a data mover without one, fails
// for good.
func TestMarkersOfARestoredPod(t *testing.T) {
	dir := t.TempDir()
	a := &Activities{MarkerDir: dir}
	require.NoError(t, a.writeMarker("cache", v1alpha1.MarkerRestored))
	data, err := os.ReadFile(filepath.Join(dir, "cache"))
	require.NoError(t, err)
	assert.Equal(t, "restored\n", string(data))
	info, err := os.Stat(filepath.Join(dir, "cache"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "the init container runs as another user")

	require.NoError(t, a.writeMarker("files", strings.Repeat("x", 10000)))
	data, err = os.ReadFile(filepath.Join(dir, "files"))
	require.NoError(t, err)
	assert.Len(t, data, maxMarkerBytes+1)

	for _, name := range []string{"", ".", "..", "../escape", `a\b`} {
		err := a.writeMarker(name, "x")
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%q: %v", name, err)
		assert.True(t, appErr.NonRetryable())
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), "escape"))
	assert.True(t, os.IsNotExist(err))
	err = (&Activities{}).writeMarker("cache", "x")
	assert.ErrorContains(t, err, "--marker-dir")
}
