package restore

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// writeTarball stores a gzipped tar of files (path: content) at key.
func writeTarball(t *testing.T, src tarballSource, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, src.loc.WriteAll(context.Background(), src.key, buf.Bytes()))
}

// walkTarball reads the tarball as the plan does, calling fn for every
// object.
func walkTarball(ctx context.Context, src tarballSource, fn func(tarball.Entry) error) error {
	return readTarball(ctx, src, func(r io.Reader) (string, error) { return tarball.Walk(r, src.limits, fn) })
}

// A tarball of a format version cairn does not know fails the restore
// for good with UnsupportedFormat, instead of restoring nothing.
func TestTarballOfAnUnknownFormatIsUnsupported(t *testing.T) {
	src := tarballSource{loc: openTempLocation(t), key: "b/b.tar.gz"}
	writeTarball(t, src, map[string]string{
		"metadata/version":                           "2.0.0",
		"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap"}`,
	})
	err := walkTarball(context.Background(), src, func(tarball.Entry) error { return nil })
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeUnsupportedFormat)
}

// An object past the limit fails the restore for good with CorruptBackup.
func TestTarballPastTheLimitsIsCorrupt(t *testing.T) {
	src := tarballSource{loc: openTempLocation(t), key: "b/b.tar.gz", limits: tarball.Limits{EntryBytes: 10}}
	writeTarball(t, src, map[string]string{
		"metadata/version":                           tarball.FormatVersion,
		"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","data":{"big":"yes"}}`,
	})
	err := walkTarball(context.Background(), src, func(tarball.Entry) error { return nil })
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeCorruptBackup)
}

// A tarball whose stored bytes differ from the manifest's digest fails
// the restore for good with CorruptBackup, though it decodes; the one
// the manifest names walks.
func TestTarballThatDiffersFromTheManifestIsCorrupt(t *testing.T) {
	ctx := context.Background()
	src := tarballSource{loc: openTempLocation(t), key: "b/b.tar.gz"}
	writeTarball(t, src, map[string]string{
		"metadata/version":                           tarball.FormatVersion,
		"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap"}`,
	})
	want, err := src.loc.Digest(ctx, src.key, nil)
	require.NoError(t, err)
	src.want = &want
	entries := 0
	require.NoError(t, walkTarball(ctx, src, func(tarball.Entry) error { entries++; return nil }))
	require.Positive(t, entries)

	writeTarball(t, src, map[string]string{
		"metadata/version":                           tarball.FormatVersion,
		"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","data":{"swapped":"in"}}`,
	})
	err = walkTarball(ctx, src, func(tarball.Entry) error { return nil })
	activitytest.RequireNonRetryable(t, corruptOr(err), v1alpha1.ErrTypeCorruptBackup)
	require.ErrorContains(t, err, "does not match the backup's manifest")
}
