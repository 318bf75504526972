package ociimage

import (
	"archive/tar"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fakeInputs(t *testing.T) (binary, certs string) {
	dir := t.TempDir()
	binary, certs = filepath.Join(dir, "cairn"), filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(binary, []byte("#!binary"), 0o755))
	require.NoError(t, os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644))
	return binary, certs
}

// An image says the architecture of the binary it holds: a release's
// arm64 image is not run on amd64 nodes, nor the other way round.
func TestImageCarriesItsArchitecture(t *testing.T) {
	binary, certs := fakeInputs(t)
	for arch, want := range map[string]string{"": "amd64", "amd64": "amd64", "arm64": "arm64"} {
		spec := Cairn(binary, certs)
		spec.Arch = arch
		img, err := Build(spec)
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, "linux", cf.OS)
		assert.Equal(t, want, cf.Architecture, "Arch %q", arch)
	}
}

// TestCairnImageIsReproducibleAndNonRoot: the same inputs give the same
// digest; the image runs /cairn as a non-root user with a writable /tmp
// and CA certificates where Go looks for them.
func TestCairnImageIsReproducibleAndNonRoot(t *testing.T) {
	binary, certs := fakeInputs(t)
	a, err := Build(Cairn(binary, certs))
	require.NoError(t, err)
	b, err := Build(Cairn(binary, certs))
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db)

	cf, err := a.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, NonRoot, cf.Config.User)
	assert.Equal(t, []string{"/cairn"}, cf.Config.Entrypoint)

	entries := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		entries[strings.TrimSuffix(h.Name, "/")] = h
		assert.Equal(t, int64(0), h.ModTime.Unix(), h.Name)
	}
	assert.Equal(t, int64(0o1777), entries["tmp"].Mode)
	assert.Equal(t, int64(0o755), entries["cairn"].Mode)
	assert.Contains(t, entries, "etc/ssl/certs/ca-certificates.crt")
	assert.Contains(t, entries, "etc/passwd")

	require.NoError(t, os.WriteFile(binary, []byte("#!other binary"), 0o755))
	c, err := Build(Cairn(binary, certs))
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, da, dc, "another binary, another digest")
}

// TestPushWritesTheImageToARegistry pushes to a registry on 127.0.0.1.
func TestPushWritesTheImageToARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	binary, certs := fakeInputs(t)
	img, err := Build(Cairn(binary, certs))
	require.NoError(t, err)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/cairn/cairn:test"
	digest, err := Push(ref, img)
	require.NoError(t, err)

	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	got, err := remote.Image(r)
	require.NoError(t, err)
	gd, err := got.Digest()
	require.NoError(t, err)
	assert.Equal(t, digest, gd)
}
