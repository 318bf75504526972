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
	"bufio"
	"fmt"
	"io"
	"path"
	"runtime"
	"strings"
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

// bufferSize batches the small writes of headers and padding before
// they reach the compressor.
const bufferSize = 256 << 10

// compressor is a gzip stream that can end a member and start another
// on the same output.
type compressor interface {
	io.Writer
	Close() error
	Reset(io.Writer)
}

// Writer streams objects into a gzipped tar.
type Writer struct {
	out   io.Writer
	gz    compressor
	buf   *bufio.Writer
	tw    *tar.Writer
	mtime time.Time
	Items int

	template  headerTemplate
	stamps    bool // whether the template fits mtime
	twPending bool // tw wrote an entry whose padding it has not flushed
	// memberEnded: the gzip member gz wrote was closed so that a segment
	// could follow; the next entry starts a new one.
	memberEnded bool
	// segment: the writer makes a segment (segment.go), not a tarball.
	segment      bool
	segmentItems int
	header       [blockSize]byte
	name         []byte
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
	tw := newWriter(w, gz, bufio.NewWriterSize(gz, bufferSize), mtime)
	if err := tw.file("metadata/version", []byte(FormatVersion)); err != nil {
		return nil, err
	}
	return tw, nil
}

func newWriter(out io.Writer, gz compressor, buf *bufio.Writer, mtime time.Time) *Writer {
	w := &Writer{out: out, gz: gz, buf: buf, tw: tar.NewWriter(buf), mtime: mtime}
	w.template, w.stamps = newHeaderTemplate(mtime)
	return w
}

// VersionOf is the version of an apiVersion ("apps/v1": "v1"), the
// folder an object's preferred-version copy goes in.
func VersionOf(apiVersion string) string {
	return apiVersion[strings.LastIndex(apiVersion, "/")+1:]
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
	if err := w.item(groupResource, "", namespace, name, data); err != nil {
		return err
	}
	if err := w.item(groupResource, version, namespace, name, data); err != nil {
		return err
	}
	w.Items++
	return nil
}

// item writes one copy of an object, its header stamped when it can be.
func (w *Writer) item(groupResource, version, namespace, name string, data []byte) error {
	w.startMember()
	if !w.stamps || !plain(groupResource, version, namespace, name) {
		return w.file(ItemPath(groupResource, version, namespace, name), data)
	}
	w.name = appendItemPath(w.name[:0], groupResource, version, namespace, name)
	if !fits(w.name, len(data)) {
		return w.file(string(w.name), data)
	}
	if w.twPending {
		if err := w.tw.Flush(); err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		w.twPending = false
	}
	w.template.stamp(&w.header, w.name, len(data))
	if _, err := w.buf.Write(w.header[:]); err != nil {
		return fmt.Errorf("tar header %s: %w", w.name, err)
	}
	if _, err := w.buf.Write(data); err != nil {
		return fmt.Errorf("tar %s: %w", w.name, err)
	}
	if pad := -len(data) & (blockSize - 1); pad > 0 {
		if _, err := w.buf.Write(zeroBlock[:pad]); err != nil {
			return fmt.Errorf("tar %s: %w", w.name, err)
		}
	}
	return nil
}

var zeroBlock [blockSize]byte

// plain says whether joining the parts needs no cleaning: none holds a
// slash and none but the optional ones is empty.
func plain(groupResource, version, namespace, name string) bool {
	return groupResource != "" && name != "" &&
		!strings.Contains(groupResource, "/") && !strings.Contains(version, "/") &&
		!strings.Contains(namespace, "/") && !strings.Contains(name, "/")
}

// appendItemPath appends ItemPath of parts that are plain.
func appendItemPath(b []byte, groupResource, version, namespace, name string) []byte {
	b = append(b, "resources/"...)
	b = append(b, groupResource...)
	b = append(b, '/')
	if version != "" {
		b = append(b, version...)
		b = append(b, PreferredVersionSuffix...)
		b = append(b, '/')
	}
	if namespace != "" {
		b = append(b, "namespaces/"...)
		b = append(b, namespace...)
	} else {
		b = append(b, "cluster"...)
	}
	b = append(b, '/')
	b = append(b, name...)
	return append(b, ".json"...)
}

func fileHeader(name string, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}
}

func (w *Writer) file(name string, data []byte) error {
	w.startMember()
	if err := w.tw.WriteHeader(fileHeader(name, int64(len(data)), w.mtime)); err != nil {
		return fmt.Errorf("tar header %s: %w", name, err)
	}
	if _, err := w.tw.Write(data); err != nil {
		return fmt.Errorf("tar %s: %w", name, err)
	}
	w.twPending = true
	return nil
}

// startMember starts a gzip member after one a segment ended.
func (w *Writer) startMember() {
	if w.memberEnded {
		w.gz.Reset(w.out)
		w.memberEnded = false
	}
}

// endMember writes what is pending of the current entry and ends the
// gzip member, so that what follows on out starts at an entry.
func (w *Writer) endMember() error {
	if w.memberEnded {
		return nil
	}
	if w.twPending {
		if err := w.tw.Flush(); err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		w.twPending = false
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	w.memberEnded = true
	return w.gz.Close()
}

// Close finishes the tar and gzip streams (not the underlying writer); a
// segment ends without the tar's end-of-archive blocks.
func (w *Writer) Close() error {
	if w.segment {
		return w.closeSegment()
	}
	w.startMember()
	if err := w.tw.Close(); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	return w.gz.Close()
}
