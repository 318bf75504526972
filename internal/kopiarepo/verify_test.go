package kopiarepo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/datatree"
)

// A whole snapshot verifies, all of it read back; with one of its pack
// blobs gone, verification names the damage instead of passing.
func TestVerifySnapshotsFindsMissingData(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	src := writeTree(t, datatree.Spec{LargeFiles: 2, LargeSize: 4 << 20, SmallFiles: 50, SmallSize: 4096, Seed: 9})
	r, err := openTest(t, loc, testPassword)
	require.NoError(t, err)
	up, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b1"})
	require.NoError(t, err)

	res, err := r.VerifySnapshots(ctx, []string{up.SnapshotID}, 100)
	require.NoError(t, err)
	assert.Empty(t, res.Errors)
	assert.GreaterOrEqual(t, res.ReadFiles, up.Files, "every file read back")
	assert.Greater(t, res.ReadBytes, int64(8<<20))

	res, err = r.VerifySnapshots(ctx, []string{"k0123456789abcdef0123456789abcdef"}, 0)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Errors, "a snapshot that is not there")

	// The files' data sits in "p" pack blobs (sharded into directories
	// by the start of their IDs): remove one.
	root := filepath.Join(loc, "kopia")
	var packs []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, path)
		if err == nil && !d.IsDir() && strings.HasPrefix(rel, "p") {
			packs = append(packs, path)
		}
		return err
	}))
	require.NotEmpty(t, packs)
	require.NoError(t, os.Remove(packs[0]))
	fresh, err := openTest(t, loc, testPassword)
	require.NoError(t, err)
	res, err = fresh.VerifySnapshots(ctx, []string{up.SnapshotID}, 0)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Errors, "a missing pack blob is found without reading the files")
	t.Logf("errors: %v", res.Errors)
}
