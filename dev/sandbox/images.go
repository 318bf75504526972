package sandbox

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cairn-backup/cairn/internal/ociimage"
)

// Images the sandbox node has without a registry: made here from local
// files and imported into its containerd.
const (
	// PauseImage holds each pod's sandbox: busybox sleeping until killed.
	PauseImage = "cairn.local/pause:v1"
	// BusyboxImage runs test pods: a static busybox with its applets.
	BusyboxImage = "cairn.local/busybox:v1"
	// CairnImage is cairn's image (ociimage.Cairn) of
	// Options.CairnBinary: data mover pods and installs run it.
	CairnImage = "cairn.local/cairn:sandbox"
)

// busyboxApplets get a link to /bin/busybox in BusyboxImage.
var busyboxApplets = []string{"sh", "cat", "echo", "ls", "mkdir", "rm", "sleep", "test", "touch", "wc", "id", "env",
	"head", "tail", "grep", "sha256sum", "dd", "true", "false", "kill", "ps", "nc", "wget", "printf", "stat", "sync", "df", "httpd"}

// imageSpec is one of the node's images.
type imageSpec struct {
	ref string
	ociimage.Spec
}

// nodeImageSpecs are the sandbox node's images; busybox is a static
// busybox binary on the host, cairn a static cairn binary ("" for no
// CairnImage).
func nodeImageSpecs(busybox, cairn string) []imageSpec {
	bb := ociimage.File{Path: "bin/busybox", Src: busybox, Mode: 0o755}
	links := map[string]string{}
	for _, a := range busyboxApplets {
		links["bin/"+a] = "busybox"
	}
	tmp := map[string]int64{"tmp": 0o1777}
	specs := []imageSpec{
		{ref: PauseImage, Spec: ociimage.Spec{Files: []ociimage.File{bb}, Dirs: tmp, Env: []string{"PATH=/bin"},
			Entrypoint: []string{"/bin/busybox", "sleep", "2147483647"}}},
		{ref: BusyboxImage, Spec: ociimage.Spec{Files: []ociimage.File{bb}, Links: links, Dirs: tmp, Env: []string{"PATH=/bin"},
			Cmd: []string{"sh"}}},
	}
	if cairn != "" {
		specs = append(specs, imageSpec{ref: CairnImage, Spec: ociimage.Cairn(cairn, hostCACerts())})
	}
	return specs
}

// hostCACerts is the machine's CA bundle, for CairnImage ("" if none).
func hostCACerts() string {
	const bundle = "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(bundle); err != nil {
		return ""
	}
	return bundle
}

// writeImageArchive writes specs as one docker-archive tarball at dst,
// which `ctr images import` takes.
func writeImageArchive(dst string, specs []imageSpec) error {
	images := map[string]v1.Image{}
	for _, s := range specs {
		img, err := ociimage.Build(s.Spec)
		if err != nil {
			return fmt.Errorf("image %s: %w", s.ref, err)
		}
		images[s.ref] = img
	}
	return ociimage.WriteArchive(dst, images)
}
