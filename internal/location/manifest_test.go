package location

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readChecked(t *testing.T, loc *Location, key string, want Digest) ([]byte, error) {
	t.Helper()
	r, err := loc.NewCheckedReader(context.Background(), key, want)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// The manifest digests what is stored, and a checked read finds a flipped
// byte, a cut and an addition, encrypted or not.
func TestManifestFindsChangedObjects(t *testing.T) {
	ctx := context.Background()
	for name, opener := range map[string]*Opener{"plain": nil, "encrypted": newOpener(t)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			loc, err := opener.Open(ctx, dir)
			require.NoError(t, err)
			defer loc.Close()
			keys := Backup("b1")
			tarball := bytes.Repeat([]byte("resources "), 100000)
			require.NoError(t, loc.WriteAll(ctx, keys.Resources(), tarball))
			require.NoError(t, loc.WriteJSON(ctx, keys.Results(), map[string]int{"errors": 0}))
			var seen int64
			sum, err := loc.WriteManifest(ctx, keys, keys.Stored(), func(n int64) { seen = n })
			require.NoError(t, err)
			assert.Positive(t, seen, "progress is reported")

			m, err := loc.ReadManifest(ctx, keys, sum)
			require.NoError(t, err)
			assert.Equal(t, []string{"resources.tar.gz", "results.json"}, m.Names(), "only what exists")
			// Another digest: an encrypted manifest's differs every run,
			// and may itself start with "0".
			other := "0" + sum[1:]
			if sum[0] == '0' {
				other = "1" + sum[1:]
			}
			_, err = loc.ReadManifest(ctx, keys, other)
			assert.ErrorIs(t, err, ErrChecksum, "a manifest backup.json does not vouch for")

			want := m.Objects["resources.tar.gz"]
			got, err := readChecked(t, loc, keys.Resources(), want)
			require.NoError(t, err)
			assert.Equal(t, tarball, got)

			path := filepath.Join(dir, keys.Resources())
			stored, err := os.ReadFile(path)
			require.NoError(t, err)
			for change, data := range map[string][]byte{
				"flipped": func() []byte { d := bytes.Clone(stored); d[len(d)/3] ^= 0x20; return d }(),
				"cut":     stored[:len(stored)-7],
				"added":   append(bytes.Clone(stored), []byte("more")...),
			} {
				require.NoError(t, os.WriteFile(path, data, 0o600))
				_, err := readChecked(t, loc, keys.Resources(), want)
				assert.Error(t, err, change)
				if name == "plain" || change != "flipped" {
					// An encrypted flip may fail authentication first.
					assert.ErrorIs(t, err, ErrChecksum, change)
				}
			}
		})
	}
}
