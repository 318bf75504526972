package location

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/sealing"
)

func newOpener(t *testing.T) *Opener {
	t.Helper()
	file, err := sealing.Generate()
	require.NoError(t, err)
	k, err := sealing.ParseKeyring(file)
	require.NoError(t, err)
	return &Opener{Keyring: k}
}

// With a keyring, everything but the metadata documents is encrypted on
// disk and reads back in plain; without it, the same objects cannot be
// read, while the metadata can.
func TestAKeyringEncryptsAllButTheMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opener := newOpener(t)
	loc, err := opener.Open(ctx, dir)
	require.NoError(t, err)
	defer loc.Close()
	assert.Equal(t, opener.KeyID(), loc.KeyID())

	keys := Backup("b1")
	secret := []byte("kind: Secret\ndata: {password: aHVudGVyMg==}\n")
	require.NoError(t, loc.WriteAll(ctx, keys.Resources(), secret))
	require.NoError(t, loc.WriteJSON(ctx, keys.Results(), map[string]string{"warning": "Secret shop/db"}))
	require.NoError(t, loc.WriteJSON(ctx, keys.Metadata(), map[string]string{"name": "b1"}))
	w, err := loc.NewWriter(ctx, keys.Part("secrets", 0, 0))
	require.NoError(t, err)
	_, err = w.Write(bytes.Repeat([]byte("{\"kind\":\"Secret\"}\n"), 10000))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	for _, k := range []string{keys.Resources(), keys.Results(), keys.Part("secrets", 0, 0)} {
		raw, err := os.ReadFile(filepath.Join(dir, k))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(raw), "age-encryption.org/v1\n"), "%s is encrypted on disk", k)
		assert.NotContains(t, string(raw), "Secret")
	}
	raw, err := os.ReadFile(filepath.Join(dir, keys.Metadata()))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"name": "b1"`, "backup.json stays readable for listing")

	got, err := loc.ReadAll(ctx, keys.Resources())
	require.NoError(t, err)
	assert.Equal(t, secret, got)
	got, err = loc.ReadAtMost(ctx, keys.Resources(), int64(len(secret)))
	require.NoError(t, err)
	assert.Equal(t, secret, got)
	var results map[string]string
	require.NoError(t, loc.ReadJSON(ctx, keys.Results(), &results))
	assert.Equal(t, "Secret shop/db", results["warning"])
	lines := 0
	require.NoError(t, loc.ReadLines(ctx, keys.Part("secrets", 0, 0), func([]byte) error { lines++; return nil }))
	assert.Equal(t, 10000, lines)

	plain, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.ReadAll(ctx, keys.Resources())
	var keyErr *sealing.KeyError
	require.ErrorAs(t, err, &keyErr)
	assert.Contains(t, err.Error(), keys.Resources())
	require.NoError(t, plain.ReadJSON(ctx, keys.Metadata(), &results))

	other, err := newOpener(t).Open(ctx, dir)
	require.NoError(t, err)
	defer other.Close()
	_, err = other.ReadAll(ctx, keys.Results())
	require.ErrorAs(t, err, &keyErr)
}

// What Velero (or cairn before a key was configured) wrote in plain reads
// as it is through a location with a keyring.
func TestAKeyringReadsPlainObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer plain.Close()
	keys := Backup("velero-1")
	require.NoError(t, plain.WriteAll(ctx, keys.VeleroResources(), []byte("\x1f\x8bnot really gzip")))

	sealed, err := newOpener(t).Open(ctx, dir)
	require.NoError(t, err)
	defer sealed.Close()
	got, err := sealed.ReadAll(ctx, keys.VeleroResources())
	require.NoError(t, err)
	assert.Equal(t, "\x1f\x8bnot really gzip", string(got))
}

// An aborted encrypted write leaves nothing behind.
func TestAnAbortedSealedWriteIsNotVisible(t *testing.T) {
	ctx := context.Background()
	loc, err := newOpener(t).Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer loc.Close()
	w, err := loc.NewWriter(ctx, "backups/b/resources.tar.gz")
	require.NoError(t, err)
	_, err = w.Write([]byte("half"))
	require.NoError(t, err)
	w.Abort()
	keys, err := loc.Keys(ctx, "backups/")
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// TestSealedOnlyRefusesPlainObjects: a plain object slipped into an
// encrypted backup by whoever can write the bucket reads as corrupt once
// the reader asks for sealed objects only; the plain metadata documents,
// and encrypted objects, still read.
func TestSealedOnlyRefusesPlainObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keys := Backup("b1")
	plain, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer plain.Close()
	require.NoError(t, plain.WriteAll(ctx, keys.Resources(), []byte("forged")))
	require.NoError(t, plain.WriteAll(ctx, keys.Metadata(), []byte(`{"name":"b1"}`)))

	loc, err := newOpener(t).Open(ctx, dir)
	require.NoError(t, err)
	defer loc.Close()
	require.NoError(t, loc.WriteAll(ctx, keys.Volumes(), []byte("sealed")))
	strict := loc.SealedOnly()

	_, err = strict.ReadAll(ctx, keys.Resources())
	require.ErrorIs(t, err, sealing.ErrPlaintext)
	require.ErrorIs(t, err, sealing.ErrCorrupt, "so that every activity reports it as CorruptBackup")
	got, err := strict.ReadAll(ctx, keys.Volumes())
	require.NoError(t, err)
	assert.Equal(t, "sealed", string(got))
	_, err = strict.ReadAll(ctx, keys.Metadata())
	assert.NoError(t, err, "backup.json is plain by design")
	got, err = loc.ReadAll(ctx, keys.Resources())
	require.NoError(t, err, "the lenient reader still reads plain objects")
	assert.Equal(t, "forged", string(got))

	bare, err := OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer bare.Close()
	assert.Same(t, bare, bare.SealedOnly(), "without a key there is nothing to insist on")
}
