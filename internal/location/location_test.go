package location

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openTemp(t *testing.T) *Location {
	t.Helper()
	loc, err := OpenPlain(context.Background(), t.TempDir()) // a bare path becomes file://
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	return loc
}

func TestNormalize(t *testing.T) {
	u, err := Normalize("file:///var/lib/cairn")
	require.NoError(t, err)
	assert.Equal(t, "file:///var/lib/cairn?create_dir=true&dir_file_mode=0700&metadata=skip&no_tmp_dir=true", u)
	_, err = Normalize("file://relative/path")
	assert.ErrorContains(t, err, "absolute path")
	_, err = Normalize("ftp://host/x")
	assert.ErrorContains(t, err, "unsupported scheme")
	_, err = Normalize("")
	assert.ErrorContains(t, err, "empty")
	u, err = Normalize("s3://bucket/prefix?region=eu-west-1")
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket/prefix?region=eu-west-1", u, "cloud URLs pass through unchanged")
}

// A file location stages a write beside its key, in a private directory,
// never in $TMPDIR.
func TestFileLocationStagesBesideTheKey(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(t.TempDir(), "loc")
	loc, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer loc.Close()
	w, err := loc.NewWriter(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	_, err = w.Write([]byte("secret data"))
	require.NoError(t, err)
	staged, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, staged, "nothing staged in $TMPDIR")
	require.NoError(t, w.Close())
	info, err := os.Stat(filepath.Join(dir, "backups", "b"))
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&0o077, "the key's directory is private")
}

// A write cut short by a kill leaves its staging file beside the key: it
// is not a key, and deleting the prefix removes it.
func TestStagingFilesAreNotKeys(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "loc")
	loc, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer loc.Close()
	require.NoError(t, loc.WriteAll(ctx, "backups/b/backup.json", []byte("{}")))
	left := filepath.Join(dir, "backups", "b", "resources.tar.gz.18eaf6cf59904310.tmp")
	require.NoError(t, os.WriteFile(left, []byte("half a tarball"), 0o600))
	keys, err := loc.Keys(ctx, "backups/b/")
	require.NoError(t, err)
	assert.Equal(t, []string{"backups/b/backup.json"}, keys)
	require.NoError(t, loc.DeletePrefix(ctx, "backups/b/", nil))
	_, err = os.Stat(left)
	assert.True(t, os.IsNotExist(err), "the staging file is deleted with its prefix")
}

func TestAbortedWriterLeavesNothing(t *testing.T) {
	ctx := context.Background()
	loc := openTemp(t)
	w, err := loc.NewWriter(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	_, err = w.Write([]byte("half a tarball"))
	require.NoError(t, err)
	w.Abort()
	ok, err := loc.Exists(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	assert.False(t, ok, "an aborted object must never become visible")

	w, err = loc.NewWriter(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	_, _ = w.Write([]byte("whole"))
	require.NoError(t, w.Close())
	data, err := loc.ReadAll(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	assert.Equal(t, "whole", string(data))
}

func TestReadMissingIsErrNotFound(t *testing.T) {
	loc := openTemp(t)
	_, err := loc.ReadAll(context.Background(), "backups/none/backup.json")
	assert.True(t, errors.Is(err, ErrNotFound), "got %v", err)
	var v struct{}
	assert.True(t, errors.Is(loc.ReadJSON(context.Background(), "x.json", &v), ErrNotFound))
	assert.NoError(t, loc.Delete(context.Background(), "never-written"), "deleting what is gone is not an error")
}

func TestDirsAndDeletePrefix(t *testing.T) {
	ctx := context.Background()
	loc := openTemp(t)
	keys := Backup("a")
	for _, k := range []string{keys.Metadata(), keys.Part("configmaps", 0, 0), keys.Part("configmaps", 0, 1), Backup("b").Metadata()} {
		require.NoError(t, loc.WriteAll(ctx, k, []byte("{}\n")))
	}
	dirs, err := loc.Dirs(ctx, BackupsPrefix())
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, dirs)

	require.NoError(t, loc.DeletePrefix(ctx, keys.Work(), nil))
	left, err := loc.Keys(ctx, keys.Prefix())
	require.NoError(t, err)
	assert.Equal(t, []string{keys.Metadata()}, left)
	require.NoError(t, loc.DeletePrefix(ctx, keys.Work(), nil), "a repeated cleanup succeeds")
}

func TestReadLinesHandlesLongLines(t *testing.T) {
	ctx := context.Background()
	loc := openTemp(t)
	long := strings.Repeat("x", 3<<20) // larger than any scanner default
	longer := strings.Repeat("y", 5<<20)
	require.NoError(t, loc.WriteAll(ctx, "part.jsonl", []byte("one\n"+long+"\n\ntwo\n"+longer+"\nlast-without-newline")))
	want := []string{"one", long, "two", longer, "last-without-newline"}
	var kept [][]byte
	require.NoError(t, loc.ReadLines(ctx, "part.jsonl", func(line []byte) error {
		kept = append(kept, line)
		return nil
	}))
	require.Len(t, kept, len(want))
	for i := range want {
		assert.True(t, string(kept[i]) == want[i], "line %d, kept by fn, is intact after the read", i)
	}

	var copied []string
	require.NoError(t, loc.ReadLinesTransient(ctx, "part.jsonl", func(line []byte) error {
		copied = append(copied, string(line))
		return nil
	}))
	require.Len(t, copied, len(want))
	for i := range want {
		assert.True(t, copied[i] == want[i], "transient line %d", i)
	}
}

func TestPartKeysSortInCollectionOrder(t *testing.T) {
	k := Backup("b")
	assert.Less(t, k.Part("configmaps", 0, 9), k.Part("configmaps", 0, 10))
	assert.Less(t, k.Part("configmaps", 1, 999), k.Part("configmaps", 2, 0))
	assert.Equal(t, "deployments.apps", k.GroupResourceOfPart(k.Part("deployments.apps", 3, 4)))
}

func TestDisplayDropsOnlyTheAddedOptions(t *testing.T) {
	n, err := Normalize("/var/lib/cairn/loc")
	if err != nil {
		t.Fatal(err)
	}
	if got := Display(n); got != "file:///var/lib/cairn/loc" {
		t.Errorf("Display(%q) = %q", n, got)
	}
	s3 := "s3://b/p?region=eu-west-1"
	if got := Display(s3); got != s3 {
		t.Errorf("Display(%q) = %q, want it unchanged", s3, got)
	}
}
