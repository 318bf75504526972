package repository

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
)

// TestTwoFirstUploadsAtOnceBothRestore: the worker makes sure of an empty
// location's repository (twice at once, as two backups starting together
// would), then the data movers of a backup's two volumes, which only
// connect, upload at once; both snapshots restore byte for byte.
func TestTwoFirstUploadsAtOnceBothRestore(t *testing.T) {
	f := newFixture(t)
	f.requireNoRepository(t)
	in := v1alpha1.EnsureRepositoryInput{Backup: "b1", Location: f.url}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			env := f.newEnv(f.acts)
			_, errs[i] = env.ExecuteActivity(f.acts.EnsureRepository, in)
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	type upload struct {
		want     map[string]string
		snapshot string
		err      error
	}
	uploads := make([]upload, 2)
	for i := range uploads {
		wg.Go(func() {
			src := t.TempDir()
			if _, err := datatree.Write(src, datatree.Spec{SmallFiles: 20, SmallSize: 4000, Seed: uint64(40 + i), NoSparse: true}); err != nil {
				uploads[i].err = err
				return
			}
			uploads[i].want, uploads[i].err = datatree.Digest(src)
			if uploads[i].err != nil {
				return
			}
			r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "datamover", NoCreate: true})
			if err != nil {
				uploads[i].err = err
				return
			}
			res, err := r.Upload(context.Background(), kopiarepo.UploadRequest{Path: src, Namespace: "shop", Claim: fmt.Sprintf("data-%d", i), Backup: "b1"})
			if err == nil {
				uploads[i].snapshot = res.SnapshotID
			}
			uploads[i].err = err
		})
	}
	wg.Wait()
	for i, u := range uploads {
		require.NoError(t, u.err, "upload %d", i)
		r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "restorer", NoCreate: true})
		require.NoError(t, err)
		dst := t.TempDir()
		_, err = r.Restore(context.Background(), kopiarepo.RestoreRequest{SnapshotID: u.snapshot, Path: dst})
		require.NoError(t, err, "restore upload %d", i)
		got, err := datatree.Digest(dst)
		require.NoError(t, err)
		assert.Empty(t, datatree.Diff(u.want, got, 10), "upload %d restored byte for byte", i)
	}
}

// TestEnsureRepositoryKeepsTheRepositoryThatIsThere: a second worker finds
// the repository and only connects to it; the data in it stays readable.
func TestEnsureRepositoryKeepsTheRepositoryThatIsThere(t *testing.T) {
	f := newFixture(t)
	id := f.upload(t, "b1", "data", 7)
	other := f.worker(t, "worker-b", password)
	_, err := f.newEnv(other).ExecuteActivity(other.EnsureRepository, v1alpha1.EnsureRepositoryInput{Backup: "b2", Location: f.url})
	require.NoError(t, err)
	snaps := f.snapshotsOf(t, "b1")
	require.Len(t, snaps, 1)
	assert.Equal(t, id, snaps[0].ID)
}

func TestEnsureRepositoryWithAWrongPasswordIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	f.upload(t, "b1", "data", 7)
	wrong := f.worker(t, "worker-b", "not the password")
	_, err := f.newEnv(wrong).ExecuteActivity(wrong.EnsureRepository, v1alpha1.EnsureRepositoryInput{Backup: "b2", Location: f.url})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeRepositoryPassword)
}
