// Package tarball writes and reads resources.tar.gz in the layout Velero
// uses (format 1.1.0), so backups of either tool restore with either:
//
//	metadata/version                                           "1.1.0"
//	resources/<resource.group>/namespaces/<ns>/<name>.json
//	resources/<resource.group>/cluster/<name>.json
//	resources/<resource.group>/<version>-preferredversion/...  same objects
//	resources/<resource.group>/<version>/...                   other versions, read only
//	                                                           (Velero's API group versions feature)
package tarball

import (
	"archive/tar"
	"fmt"
	"io"
	"path"
	"runtime"
	"time"

	"github.com/klauspost/pgzip"
)

// compressBlock is the input each core compresses at a time.
const compressBlock = 1 << 20

// FormatVersion is the Velero backup format this package writes.
const FormatVersion = "1.1.0"

// PreferredVersionSuffix marks the folder of the version the source
// cluster preferred.
const PreferredVersionSuffix = "-preferredversion"

// Writer streams objects into a gzipped tar.
type Writer struct {
	gz    *pgzip.Writer
	tw    *tar.Writer
	mtime time.Time
	Items int
}

// NewWriter starts a tarball on w; mtime is stamped on every entry so the
// same backup always produces the same bytes.
func NewWriter(w io.Writer, mtime time.Time) (*Writer, error) {
	// Compression is most of the time a tarball takes (every object is
	// in it twice): blocks are compressed on every core. The bytes do not
	// depend on how many there are.
	gz, err := pgzip.NewWriterLevel(w, pgzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := gz.SetConcurrency(compressBlock, runtime.GOMAXPROCS(0)); err != nil {
		return nil, err
	}
	tw := &Writer{gz: gz, tw: tar.NewWriter(gz), mtime: mtime}
	if err := tw.file("metadata/version", []byte(FormatVersion)); err != nil {
		return nil, err
	}
	return tw, nil
}

// ItemPath is the path of an object in the tarball; version is empty for
// the version-less copy.
func ItemPath(groupResource, version, namespace, name string) string {
	parts := []string{"resources", groupResource}
	if version != "" {
		parts = append(parts, version+PreferredVersionSuffix)
	}
	if namespace != "" {
		parts = append(parts, "namespaces", namespace)
	} else {
		parts = append(parts, "cluster")
	}
	return path.Join(append(parts, name+".json")...)
}

// Add writes one object at its preferred version.
func (w *Writer) Add(groupResource, version, namespace, name string, data []byte) error {
	if name == "" {
		return fmt.Errorf("%s object without a name", groupResource)
	}
	if err := w.file(ItemPath(groupResource, "", namespace, name), data); err != nil {
		return err
	}
	if err := w.file(ItemPath(groupResource, version, namespace, name), data); err != nil {
		return err
	}
	w.Items++
	return nil
}

func (w *Writer) file(name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: w.mtime, Typeflag: tar.TypeReg}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar header %s: %w", name, err)
	}
	if _, err := w.tw.Write(data); err != nil {
		return fmt.Errorf("tar %s: %w", name, err)
	}
	return nil
}

// Close finishes the tar and gzip streams (not the underlying writer).
func (w *Writer) Close() error {
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.gz.Close()
}
