package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotCopiesKeepOwners: a snapshot keeps who owns each file, as
// a real driver's does, so a restore has owners to give back.
func TestSnapshotCopiesKeepOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root gives files to other users")
	}
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.MkdirAll(filepath.Join(src, "private"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(src, "private", "key"), []byte("k"), 0o600))
	require.NoError(t, os.Symlink("private/key", filepath.Join(src, "link")))
	for _, p := range []string{"private", "private/key", "link"} {
		require.NoError(t, os.Lchown(filepath.Join(src, p), 1000, 1001))
	}
	dst := filepath.Join(t.TempDir(), "dst")
	require.NoError(t, copyTree(src, dst))
	for _, p := range []string{"private", "private/key", "link"} {
		info, err := os.Lstat(filepath.Join(dst, p))
		require.NoError(t, err)
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, [2]uint32{1000, 1001}, [2]uint32{st.Uid, st.Gid}, p)
	}
	info, err := os.Stat(filepath.Join(dst, "private", "key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
