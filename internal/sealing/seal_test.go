package sealing

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newKeyring(t *testing.T) (*Keyring, []byte) {
	t.Helper()
	file, err := Generate()
	require.NoError(t, err)
	k, err := ParseKeyring(file)
	require.NoError(t, err)
	return k, file
}

func seal(t *testing.T, k *Keyring, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := k.Seal(&buf)
	require.NoError(t, err)
	_, err = w.Write(plain)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func unseal(k *Keyring, data []byte) ([]byte, error) {
	r, err := Open(bytes.NewReader(data), k)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestSealedObjectsReadBackAndHideTheirContent(t *testing.T) {
	k, _ := newKeyring(t)
	plain := bytes.Repeat([]byte("kind: Secret\ndata: c2VjcmV0\n"), 10000) // several 64 KiB chunks
	sealed := seal(t, k, plain)
	assert.NotContains(t, string(sealed), "kind: Secret")
	assert.True(t, strings.HasPrefix(string(sealed), magic))
	got, err := unseal(k, sealed)
	require.NoError(t, err)
	assert.Equal(t, plain, got)
}

func TestPlainObjectsReadAsTheyAre(t *testing.T) {
	k, _ := newKeyring(t)
	for _, plain := range [][]byte{[]byte("\x1f\x8b gzip"), []byte(`{"json":1}`), {}, []byte("age")} {
		got, err := unseal(k, plain)
		require.NoError(t, err)
		assert.Equal(t, plain, got)
		got, err = unseal(nil, plain)
		require.NoError(t, err)
		assert.Equal(t, plain, got)
	}
}

func TestASealedObjectNeedsItsKey(t *testing.T) {
	k, _ := newKeyring(t)
	other, _ := newKeyring(t)
	sealed := seal(t, k, []byte("secret"))

	_, err := unseal(nil, sealed)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), "no encryption key is configured")

	_, err = unseal(other, sealed)
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, err.Error(), other.ID())
}

func TestRotatedKeysStillDecryptOldObjects(t *testing.T) {
	_, oldFile := newKeyring(t)
	_, newFile := newKeyring(t)
	old, err := ParseKeyring(oldFile)
	require.NoError(t, err)
	rotated, err := ParseKeyring(append(append([]byte(nil), newFile...), oldFile...))
	require.NoError(t, err)
	assert.Equal(t, []string{rotated.ID(), old.ID()}, rotated.IDs())
	assert.NotEqual(t, old.ID(), rotated.ID())

	got, err := unseal(rotated, seal(t, old, []byte("written before the rotation")))
	require.NoError(t, err)
	assert.Equal(t, "written before the rotation", string(got))
	_, err = unseal(old, seal(t, rotated, []byte("after")))
	var ke *KeyError
	require.ErrorAs(t, err, &ke, "the old key alone cannot read what the new one wrote")
}

func TestTamperedOrCutObjectsAreCorruptNotGarbled(t *testing.T) {
	k, _ := newKeyring(t)
	plain := bytes.Repeat([]byte("0123456789abcdef"), 20000)
	sealed := seal(t, k, plain)

	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)/2] ^= 1
	_, err := unseal(k, flipped)
	assert.ErrorIs(t, err, ErrCorrupt)

	_, err = unseal(k, sealed[:len(sealed)-100])
	assert.ErrorIs(t, err, ErrCorrupt)

	header := append([]byte(nil), sealed...)
	header[30] ^= 1
	_, err = unseal(k, header)
	assert.Error(t, err)
}

func TestAStoreErrorIsNotCorruption(t *testing.T) {
	k, _ := newKeyring(t)
	sealed := seal(t, k, bytes.Repeat([]byte("x"), 200000))
	broken := errors.New("connection reset")
	r, err := Open(io.MultiReader(bytes.NewReader(sealed[:100000]), iotestErr{broken}), k)
	require.NoError(t, err)
	_, err = io.ReadAll(r)
	assert.ErrorIs(t, err, broken)
	assert.NotErrorIs(t, err, ErrCorrupt)
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func TestKeyFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.txt")
	k, err := EnsureKeyFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := EnsureKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, k.ID(), again.ID(), "an existing key file is kept")

	_, err = ParseKeyring([]byte("# only a comment\n"))
	assert.Error(t, err)
	_, err = ParseKeyring([]byte("AGE-SECRET-KEY-1NOTAKEY\n"))
	assert.Error(t, err)
}
