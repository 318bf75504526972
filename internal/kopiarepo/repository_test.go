package kopiarepo

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kopia/kopia/fs/localfs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/datatree"
)

const testPassword = "correct horse battery staple"

func openTest(t *testing.T, loc, password string) (*Repository, error) {
	t.Helper()
	r, err := Open(context.Background(), Config{Location: "file://" + loc, Password: password,
		ConfigDir: filepath.Join(t.TempDir(), "kopia"), Hostname: "test"})
	if err == nil {
		t.Cleanup(func() { r.Close(context.Background()) })
	}
	return r, err
}

func writeTree(t *testing.T, s datatree.Spec) string {
	t.Helper()
	dir := t.TempDir()
	_, err := datatree.Write(dir, s)
	require.NoError(t, err)
	return dir
}

func TestUploadRestoreIsByteIdenticalAndIncremental(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	src := writeTree(t, datatree.Spec{LargeFiles: 2, LargeSize: 8 << 20, SmallFiles: 300, SmallSize: 4096, Seed: 1})
	r, err := openTest(t, loc, testPassword)
	require.NoError(t, err)

	first, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b1"})
	require.NoError(t, err)
	assert.NotEmpty(t, first.SnapshotID)
	assert.Empty(t, first.ParentID, "a volume's first snapshot has no parent")
	assert.EqualValues(t, 302+1, first.Files, "2 large, 300 small and the sparse file")
	assert.Greater(t, first.Progress.UploadedBytes, int64(16<<20), "the random data is uploaded")

	second, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b2"})
	require.NoError(t, err)
	assert.Equal(t, first.SnapshotID, second.ParentID, "the second backup reads the first as its parent")
	assert.Zero(t, second.Progress.HashedBytes, "unchanged files are not read again")
	assert.Less(t, second.Progress.UploadedBytes, int64(64<<10), "unchanged data is not uploaded again")

	again, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b2"})
	require.NoError(t, err)
	assert.True(t, again.Reused, "a retry after the save finds the backup's snapshot")
	assert.Equal(t, second.SnapshotID, again.SnapshotID)

	dst := filepath.Join(t.TempDir(), "restored")
	res, err := r.Restore(ctx, RestoreRequest{SnapshotID: first.SnapshotID, Path: dst})
	require.NoError(t, err)
	assert.EqualValues(t, 303, res.Files)
	want, err := datatree.Digest(src)
	require.NoError(t, err)
	got, err := datatree.Digest(dst)
	require.NoError(t, err)
	assert.Empty(t, datatree.Diff(want, got, 10), "the restored tree is byte-identical")
	assertSparseAndTimed(t, filepath.Join(src, "sparse.img"), filepath.Join(dst, "sparse.img"))

	snaps, err := r.BackupSnapshots(ctx, "b1")
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	assert.Equal(t, "app/data", snaps[0].Volume)
	n, err := r.DeleteBackupSnapshots(ctx, "b1")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	snaps, err = r.BackupSnapshots(ctx, "b1")
	require.NoError(t, err)
	assert.Empty(t, snaps)
	snaps, err = r.BackupSnapshots(ctx, "b2")
	require.NoError(t, err)
	assert.Len(t, snaps, 1, "another backup's snapshot stays")
}

func TestCanceledUploadResumesFromCheckpoint(t *testing.T) {
	loc := t.TempDir()
	// Small files only: a checkpoint counts a file it caught mid-read at
	// its full size, though a retry reads it again, and the slack below
	// allows for a few such files, not for a large (or sparse) one.
	src := writeTree(t, datatree.Spec{SmallFiles: 2000, SmallSize: 32 << 10, Seed: 2, NoSparse: true})
	total, err := datatree.Bytes(src)
	require.NoError(t, err)
	r, err := openTest(t, loc, testPassword)
	require.NoError(t, err)
	dir, err := localfs.Directory(src)
	require.NoError(t, err)

	// The upload reads half the data, then stands still at the gate. The
	// first checkpoint that began after the gate was reached covers every
	// file read before it; the upload is canceled once that checkpoint is
	// durable, whatever the machine's speed.
	gate := newReadGate(total / 2)
	t.Cleanup(gate.release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var atCancel UploadProgress
	var reachedAtPrevious atomic.Bool
	req := UploadRequest{Namespace: "app", Claim: "data", Backup: "b1", CheckpointInterval: 50 * time.Millisecond,
		OnCheckpoint: func(p UploadProgress) {
			if reachedAtPrevious.Load() && ctx.Err() == nil {
				atCancel = p
				cancel()
			}
			reachedAtPrevious.Store(gate.reached())
		}}
	_, err = r.upload(ctx, req, Source("app", "data"), gatedDir{dir, gate}, time.Now())
	require.Error(t, err, "a canceled upload saves no snapshot")
	gate.release()

	// slack: a few 32 KiB files that were mid-read at the gate, and
	// kopia's own writes (indexes, manifests).
	const slack = 1 << 20
	require.GreaterOrEqual(t, atCancel.Checkpoints, int64(2), "the upload was canceled after a checkpoint")
	assert.GreaterOrEqual(t, atCancel.CheckpointedBytes, total/2-slack, "the checkpoint covers what was read before the gate")
	snaps, err := r.BackupSnapshots(context.Background(), "b1")
	require.NoError(t, err)
	require.NotEmpty(t, snaps, "the canceled upload left its checkpoints")
	var covered int64
	for _, s := range snaps {
		assert.False(t, s.Complete)
		covered = max(covered, s.Bytes)
	}
	assert.GreaterOrEqual(t, covered, atCancel.CheckpointedBytes, "the progress report counts what the stored checkpoint covers")
	t.Logf("total %d bytes, the newest checkpoint covers %d", total, covered)

	// What the checkpoint covers is neither read nor sent again.
	res, err := r.Upload(context.Background(), UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b1"})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Checkpoints, 1, "the retry started from the checkpoint")
	assert.Less(t, res.Progress.HashedBytes, total-covered+slack, "the retry reads only what the checkpoint does not cover")
	assert.Less(t, res.Progress.UploadedBytes, total-covered+slack, "the retry uploads only what the checkpoint does not cover")
	snaps, err = r.BackupSnapshots(context.Background(), "b1")
	require.NoError(t, err)
	require.Len(t, snaps, 1, "the checkpoints are gone once the snapshot is saved")
	assert.True(t, snaps[0].Complete)
}

func TestWrongPasswordLeavesRepositoryUntouched(t *testing.T) {
	loc := t.TempDir()
	r, err := openTest(t, loc, testPassword)
	require.NoError(t, err)
	src := writeTree(t, datatree.Spec{SmallFiles: 10, SmallSize: 100, Seed: 3})
	_, err = r.Upload(context.Background(), UploadRequest{Path: src, Namespace: "a", Claim: "b", Backup: "b1"})
	require.NoError(t, err)
	require.NoError(t, r.Close(context.Background()))
	before, err := datatree.Digest(loc)
	require.NoError(t, err)

	_, err = openTest(t, loc, "not the password")
	require.ErrorIs(t, err, ErrWrongPassword)
	assert.NotContains(t, err.Error(), "not the password", "the password never appears in errors")
	after, err := datatree.Digest(loc)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a wrong password changes nothing in the repository")

	_, err = openTest(t, loc, "")
	require.ErrorIs(t, err, ErrNoPassword)
}

func TestConnectionFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kopia")
	r, err := Open(context.Background(), Config{Location: "file://" + t.TempDir(), Password: testPassword, ConfigDir: dir})
	require.NoError(t, err)
	defer r.Close(context.Background())
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm())
	files, err := filepath.Glob(filepath.Join(dir, "*.config"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	info, err = os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm())
	body, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotContains(t, string(body), testPassword)
}

func TestUnsupportedLocation(t *testing.T) {
	_, err := Open(context.Background(), Config{Location: "mem://x", Password: testPassword, ConfigDir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "volume data cannot be kept in a mem:// location")
}

func TestMaintenanceTakesOwnershipOnce(t *testing.T) {
	loc := t.TempDir()
	open := func(host string) *Repository {
		r, err := Open(context.Background(), Config{Location: "file://" + loc, Password: testPassword,
			ConfigDir: filepath.Join(t.TempDir(), "kopia"), Hostname: host})
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	r := open(MaintenanceHostname)
	src := writeTree(t, datatree.Spec{SmallFiles: 20, SmallSize: 1000, Seed: 4})
	_, err := r.Upload(context.Background(), UploadRequest{Path: src, Namespace: "a", Claim: "b", Backup: "b1"})
	require.NoError(t, err)
	_, err = r.DeleteBackupSnapshots(context.Background(), "b1")
	require.NoError(t, err)
	require.NoError(t, r.Maintain(context.Background(), "full"))
	require.NoError(t, open(MaintenanceHostname).Maintain(context.Background(), "quick"), "any worker runs it under the same identity")
	err = open("someone-else").Maintain(context.Background(), "quick")
	require.ErrorIs(t, err, ErrMaintenanceOwner)
}

// assertSparseAndTimed: the restored file keeps the source's hole (it
// takes about the space of its data) and its modification time, which the
// incremental retry of a restore compares.
func assertSparseAndTimed(t *testing.T, src, restored string) {
	t.Helper()
	want, err := os.Stat(src)
	require.NoError(t, err)
	got, err := os.Stat(restored)
	require.NoError(t, err)
	assert.Equal(t, want.Size(), got.Size())
	assert.True(t, want.ModTime().Equal(got.ModTime()), "modification time %v, want %v", got.ModTime(), want.ModTime())
	allocated := got.Sys().(*syscall.Stat_t).Blocks * 512
	assert.Less(t, allocated, int64(4<<20), "the 16 MiB hole is not written: %d bytes allocated of %d", allocated, got.Size())
}

func TestUncachedRestoreLeavesNoCopyOfTheData(t *testing.T) {
	ctx := context.Background()
	loc, configDir := t.TempDir(), t.TempDir()
	src := writeTree(t, datatree.Spec{LargeFiles: 1, LargeSize: 4 << 20, SmallFiles: 20, SmallSize: 4096, Seed: 2, NoSparse: true})
	open := func(uncached bool) *Repository {
		r, err := Open(ctx, Config{Location: "file://" + loc, Password: testPassword, ConfigDir: configDir, Hostname: "test", Uncached: uncached})
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(ctx) })
		return r
	}
	cached := open(false)
	up, err := cached.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b1"})
	require.NoError(t, err)
	want, err := datatree.Digest(src)
	require.NoError(t, err)
	restore := func(r *Repository, into string) {
		dst := filepath.Join(t.TempDir(), into)
		_, err := r.Restore(ctx, RestoreRequest{SnapshotID: up.SnapshotID, Path: dst})
		require.NoError(t, err)
		got, err := datatree.Digest(dst)
		require.NoError(t, err)
		assert.Empty(t, datatree.Diff(want, got, 10), "the restored tree is byte-identical")
	}

	before := treeBytes(t, configDir)
	restore(open(true), "uncached")
	assert.Less(t, treeBytes(t, configDir)-before, int64(64<<10), "an uncached restore writes nothing but its connection file")

	// What the check above would see of a cached restore.
	before = treeBytes(t, configDir)
	restore(cached, "cached")
	assert.Greater(t, treeBytes(t, configDir)-before, int64(4<<20), "a cached restore keeps a copy of the data it read")
}

// treeBytes is the size of the files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	}))
	return n
}
