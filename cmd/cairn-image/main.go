// Command cairn-image builds cairn's container image from a static cairn
// binary, without a container engine, writes it as an archive that
// `ctr images import`, `docker load` and `podman load` take, and pushes
// it when asked. The same binary gives the same digest.
//
//	cairn-image --binary .cache/image/cairn --out .cache/image/cairn.tar [--push registry/name:tag]
package main

import (
	"flag"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cairn-backup/cairn/internal/ociimage"
)

func main() {
	binary := flag.String("binary", "", "static cairn binary (CGO_ENABLED=0)")
	arch := flag.String("arch", "amd64", "the binary's architecture, the image's: amd64 or arm64")
	caCerts := flag.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA certificates the image trusts")
	ref := flag.String("ref", "cairn.local/cairn:dev", "reference the archive names the image by")
	out := flag.String("out", "", "archive to write (none if empty)")
	push := flag.String("push", "", "registry reference to push to (registry/name:tag); credentials from the Docker config")
	flag.Parse()
	if err := run(*binary, *arch, *caCerts, *ref, *out, *push); err != nil {
		fmt.Fprintln(os.Stderr, "cairn-image:", err)
		os.Exit(1)
	}
}

func run(binary, arch, caCerts, ref, out, push string) error {
	if binary == "" || (out == "" && push == "") {
		return fmt.Errorf("--binary and one of --out or --push are required")
	}
	if arch != "amd64" && arch != "arm64" {
		return fmt.Errorf("--arch %q: amd64 or arm64", arch)
	}
	spec := ociimage.Cairn(binary, caCerts)
	spec.Arch = arch
	img, err := ociimage.Build(spec)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if out != "" {
		if err := ociimage.WriteArchive(out, map[string]v1.Image{ref: img}); err != nil {
			return err
		}
		fmt.Printf("%s %s written to %s\n", ref, digest, out)
	}
	if push != "" {
		if _, err := ociimage.Push(push, img); err != nil {
			return err
		}
		fmt.Printf("%s@%s pushed\n", push, digest)
	}
	return nil
}
