package kopiarepo

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/blob/filesystem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/cairn-backup/cairn/internal/datatree"
)

// A read of unknown length is charged what it read, after reading it:
// kopia's throttle first takes 20 MB for it, which at a cap of a few
// MB/s made every small read of an opening repository wait seconds.
func TestThrottleChargesWhatIsTransferred(t *testing.T) {
	ctx := context.Background()
	st, err := filesystem.New(ctx, &filesystem.Options{Path: t.TempDir()}, true)
	require.NoError(t, err)
	require.NoError(t, st.PutBlob(ctx, "small", sliceBytes(make([]byte, 1000)), blob.PutOptions{}))

	capped := throttle(st, 1, 1).(*throttledStorage)
	// So slow that no token comes back while the test runs.
	capped.upload, capped.download = rate.NewLimiter(1e-9, 1<<16), rate.NewLimiter(1e-9, 1<<16)
	burst := float64(1 << 16)
	var out outputBuffer
	require.NoError(t, capped.GetBlob(ctx, "small", 0, -1, &out))
	assert.Equal(t, 1000, out.Length())
	assert.InDelta(t, burst-1000, capped.download.Tokens(), 0.01, "the whole-blob read cost what it read")
	require.NoError(t, capped.GetBlob(ctx, "small", 10, 100, &out))
	assert.InDelta(t, burst-1100, capped.download.Tokens(), 0.01, "a ranged read costs its length")

	require.NoError(t, capped.PutBlob(ctx, "more", sliceBytes(make([]byte, 500)), blob.PutOptions{}))
	assert.InDelta(t, burst-500, capped.upload.Tokens(), 0.01, "a write costs its length")
	assert.InDelta(t, burst-1100, capped.download.Tokens(), 0.01, "and nothing of the download cap")

	assert.Same(t, st, throttle(st, 0, 0), "no cap, no wrapper")
}

// A capped connection is kept with cairn's throttle in place of kopia's,
// and opens again from its connection file.
func TestCappedConnectionOpensAgain(t *testing.T) {
	ctx := context.Background()
	loc, configDir := t.TempDir(), filepath.Join(t.TempDir(), "kopia")
	cfg := Config{Location: "file://" + loc, Password: testPassword, ConfigDir: configDir, Hostname: "test",
		UploadBytesPerSecond: 50 << 20, DownloadBytesPerSecond: 50 << 20}
	src := writeTree(t, datatree.Spec{SmallFiles: 20, SmallSize: 2048, Seed: 7})
	want, err := datatree.Digest(src)
	require.NoError(t, err)

	r, err := Open(ctx, cfg)
	require.NoError(t, err)
	up, err := r.Upload(ctx, UploadRequest{Path: src, Namespace: "app", Claim: "data", Backup: "b1"})
	require.NoError(t, err)
	require.NoError(t, r.Close(ctx))

	files, err := filepath.Glob(filepath.Join(configDir, "*.config"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	body, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(body), `"type": "`+throttledType+`"`)
	assert.NotContains(t, string(body), "maxDownloadSpeedBytesPerSecond", "kopia's throttle is not set too")

	r, err = Open(ctx, cfg)
	require.NoError(t, err)
	defer r.Close(ctx)
	out := filepath.Join(t.TempDir(), "out")
	_, err = r.Restore(ctx, RestoreRequest{SnapshotID: up.SnapshotID, Backup: "b1", Volume: "app/data", Path: out})
	require.NoError(t, err)
	got, err := datatree.Digest(out)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// sliceBytes and outputBuffer are kopia's blob.Bytes and OutputBuffer
// over a byte slice (kopia's own are internal).
type sliceBytes []byte

func (b sliceBytes) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b)
	return int64(n), err
}
func (b sliceBytes) Length() int { return len(b) }
func (b sliceBytes) Reader() io.ReadSeekCloser {
	return struct {
		io.ReadSeeker
		io.Closer
	}{bytes.NewReader(b), io.NopCloser(nil)}
}

type outputBuffer struct{ bytes.Buffer }

func (o *outputBuffer) Length() int { return o.Len() }
