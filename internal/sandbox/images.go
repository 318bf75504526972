package sandbox

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Images the sandbox node has without a registry: made here from local
// files and imported into its containerd.
const (
	// PauseImage holds each pod's sandbox: busybox sleeping until killed.
	PauseImage = "cairn.local/pause:v1"
	// BusyboxImage runs test pods: a static busybox with its applets.
	BusyboxImage = "cairn.local/busybox:v1"
	// CairnImage holds Options.CairnBinary as /cairn: data mover pods
	// run it.
	CairnImage = "cairn.local/cairn:sandbox"
)

// busyboxApplets get a link to /bin/busybox in BusyboxImage.
var busyboxApplets = []string{"sh", "cat", "echo", "ls", "mkdir", "rm", "sleep", "test", "touch", "wc", "id", "env",
	"head", "tail", "grep", "sha256sum", "dd", "true", "false", "kill", "ps", "nc", "wget", "printf", "stat", "sync", "df", "httpd"}

// imageFile is one file of an image layer, read from the host.
type imageFile struct {
	path string // in the image
	src  string // on the host
	mode int64
}

// imageSpec is an image made of one layer.
type imageSpec struct {
	ref        string
	files      []imageFile
	links      map[string]string // symlink in the image -> its target
	entrypoint []string
	cmd        []string
}

// nodeImageSpecs are the sandbox node's images; busybox is a static
// busybox binary on the host, cairn a static cairn binary ("" for no
// CairnImage).
func nodeImageSpecs(busybox, cairn string) []imageSpec {
	bb := imageFile{path: "bin/busybox", src: busybox, mode: 0o755}
	links := map[string]string{}
	for _, a := range busyboxApplets {
		links["bin/"+a] = "busybox"
	}
	specs := []imageSpec{
		{ref: PauseImage, files: []imageFile{bb}, entrypoint: []string{"/bin/busybox", "sleep", "2147483647"}},
		{ref: BusyboxImage, files: []imageFile{bb}, links: links, cmd: []string{"sh"}},
	}
	if cairn != "" {
		specs = append(specs, imageSpec{ref: CairnImage, files: []imageFile{{path: "cairn", src: cairn, mode: 0o755}}, entrypoint: []string{"/cairn"}})
	}
	return specs
}

// writeImageArchive writes specs as one docker-archive tarball at dst,
// which `ctr images import` takes.
func writeImageArchive(dst string, specs []imageSpec) error {
	refs := map[name.Reference]v1.Image{}
	for _, s := range specs {
		img, err := buildImage(s)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.ref, err)
		}
		tag, err := name.NewTag(s.ref)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.ref, err)
		}
		refs[tag] = img
	}
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		f.Close()
		return fmt.Errorf("image archive: %w", err)
	}
	return f.Close()
}

func buildImage(s imageSpec) (v1.Image, error) {
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
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint, cf.Config.Cmd = s.entrypoint, s.cmd
	cf.Config.Env = []string{"PATH=/bin"}
	return mutate.ConfigFile(img, cf)
}

// layerOf is the image's one layer as a tar: its directories, files and
// links, in a stable order.
func layerOf(s imageSpec) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{"tmp": true}
	for _, f := range s.files {
		dirs[path.Dir(f.path)] = true
	}
	for l := range s.links {
		dirs[path.Dir(l)] = true
	}
	for _, d := range sortedKeys(dirs) {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}); err != nil {
			return nil, err
		}
	}
	for _, f := range s.files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: f.mode, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	for _, l := range sortedKeys(s.links) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: s.links[l], Mode: 0o777}); err != nil {
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
