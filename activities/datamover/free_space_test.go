package datamover

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sys/unix"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestFreeSpaceOfAPodVolume: a copy larger than its volume's file system
// can take fails for good, naming both sizes; what an earlier attempt
// wrote counts as written.
func TestFreeSpaceOfAPodVolume(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "written"), make([]byte, 1<<20), 0o600))
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	free := int64(st.Bavail) * st.Bsize

	require.NoError(t, checkFreeSpace(dir, 1<<20), "what is written is not needed again")
	require.NoError(t, checkFreeSpace(dir, 0))
	err := checkFreeSpace(dir, 2*free+(1<<40))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, v1alpha1.ErrTypeNoSpace, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Error(), "free")
}
