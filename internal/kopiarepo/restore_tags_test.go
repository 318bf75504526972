package kopiarepo

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/datatree"
)

// TestRestoreChecksTheSnapshotsTags: a volumes.json rewritten in the
// bucket to point a claim at another backup's or another volume's
// snapshot restores nothing; the snapshot it names does.
func TestRestoreChecksTheSnapshotsTags(t *testing.T) {
	ctx := context.Background()
	r, err := openTest(t, t.TempDir(), testPassword)
	require.NoError(t, err)
	src := writeTree(t, datatree.Spec{SmallFiles: 3, SmallSize: 100, Seed: 2})
	up, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "team-b", Claim: "secrets", Backup: "b-other"})
	require.NoError(t, err)

	for name, req := range map[string]RestoreRequest{
		"another backup's": {Backup: "b-mine", Volume: "team-b/secrets"},
		"another volume's": {Backup: "b-other", Volume: "team-a/data"},
	} {
		req.SnapshotID, req.Path = up.SnapshotID, filepath.Join(t.TempDir(), "out")
		_, err := r.Restore(ctx, req)
		require.ErrorIs(t, err, ErrSnapshotMismatch, name)
		assert.NoDirExists(t, req.Path, "nothing is written for %s", name)
	}
	_, err = r.Restore(ctx, RestoreRequest{SnapshotID: up.SnapshotID, Backup: "b-other", Volume: "team-b/secrets", Path: filepath.Join(t.TempDir(), "out")})
	require.NoError(t, err)
}
