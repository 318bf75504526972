// Package ociimage makes container images of one layer from local files,
// without a container engine: the same files give the same digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one file of the layer: Data, or the contents of Src.
type File struct {
	Path string // in the image, without a leading slash
	Src  string
	Data []byte
	Mode int64
}

// Spec is an image of one layer.
type Spec struct {
	Files []File
	// Links are symlinks: path in the image -> target.
	Links map[string]string
	// Dirs are directories with their modes; the parents of files and
	// links are made 0755 when not listed.
	Dirs map[string]int64
	// Arch is the image's architecture: amd64 (the default) or arm64.
	Arch       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
}

// epoch is every file's and the image's time, for reproducible digests.
var epoch = time.Unix(0, 0).UTC()

// Build makes the image for linux and s.Arch (amd64 when empty), whose
// binaries s's files must be.
func Build(s Spec) (v1.Image, error) {
	layerTar, err := layerOf(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.Arch
	if cf.Architecture == "" {
		cf.Architecture = "amd64"
	}
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint, cf.Config.Cmd = s.Entrypoint, s.Cmd
	cf.Config.Env = s.Env
	cf.Config.User, cf.Config.WorkingDir = s.User, s.WorkingDir
	return mutate.ConfigFile(img, cf)
}

// WriteArchive writes images, by reference, as one tarball that
// `ctr images import`, `docker load` and `podman load` take.
func WriteArchive(dst string, images map[string]v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for ref, img := range images {
		tag, err := name.NewTag(ref)
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		refs[tag] = img
	}
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		return errors.Join(fmt.Errorf("image archive: %w", err), f.Close())
	}
	return f.Close()
}

// layerOf is the layer as a tar: directories, files and links, in a
// stable order, every time the epoch.
func layerOf(s Spec) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]int64{}
	for d, mode := range s.Dirs {
		dirs[d] = mode
	}
	parents := func(p string) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}
	for _, f := range s.Files {
		parents(f.Path)
	}
	for l := range s.Links {
		parents(l)
	}
	for d := range s.Dirs {
		parents(d)
	}
	for _, d := range sortedKeys(dirs) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: dirs[d], ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	files := append([]File(nil), s.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		data := f.Data
		if f.Src != "" {
			var err error
			if data, err = os.ReadFile(f.Src); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: f.Mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	for _, l := range sortedKeys(s.Links) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: s.Links[l], Mode: 0o777, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Push writes img to the registry of ref, with the credentials of the
// Docker config ($DOCKER_CONFIG, ~/.docker/config.json), and returns the
// pushed digest.
func Push(ref string, img v1.Image) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	return img.Digest()
}
