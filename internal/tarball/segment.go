package tarball

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// A segment is the tar entries of some objects, without the tar's
// end-of-archive blocks, compressed as one gzip member. A gzip stream may
// hold several members one after another (RFC 1952), which every gzip
// reader decompresses as one stream, and a tar is its entries one after
// another: so the tarball of a backup can be spliced together from
// segments made while its objects were collected, without decompressing
// them again. Its gzip header's comment says what the segment holds, so
// a segment made for another tarball (another mtime) is not spliced in.

// segmentComment is the format of a segment's gzip comment.
const segmentComment = "cairn tarball segment: items=%d mtime=%d"

// NewSegment starts a segment of items objects on w, each entry stamped
// mtime. Add the objects, then Close: a segment whose objects are not
// items in number does not close.
func NewSegment(w io.Writer, mtime time.Time, items int) *Writer {
	gz := segmentCompressors.Get().(*gzip.Writer)
	gz.Reset(w)
	gz.Comment = fmt.Sprintf(segmentComment, items, mtime.UnixNano())
	buf := segmentBuffers.Get().(*bufio.Writer)
	buf.Reset(gz)
	sw := newWriter(w, gz, buf, mtime)
	sw.segment, sw.segmentItems = true, items
	return sw
}

// A collection makes a segment of every page it stores: compressors and
// buffers are reused, not made anew (a compressor is a few hundred KiB
// of tables: making them, and collecting them, was most of the CPU the
// segments took).
var (
	segmentCompressors = sync.Pool{New: func() any {
		gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
		return gz
	}}
	segmentBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, bufferSize) }}
)

func (w *Writer) closeSegment() error {
	if w.Items != w.segmentItems {
		return fmt.Errorf("segment of %d objects holds %d", w.segmentItems, w.Items)
	}
	if err := w.endMember(); err != nil {
		return fmt.Errorf("finish segment: %w", err)
	}
	w.buf.Reset(io.Discard)
	segmentBuffers.Put(w.buf)
	segmentCompressors.Put(w.gz)
	return nil
}

// AppendSegment copies the segment r reads into the tarball as it is,
// and counts its objects among the tarball's. A segment made for
// another mtime, or a stream that is no segment, is not copied: ok is
// false, nothing was written, and the caller writes the objects itself.
func (w *Writer) AppendSegment(r io.Reader) (ok bool, err error) {
	if w.segment {
		return false, fmt.Errorf("a segment cannot hold another")
	}
	rec := &headerRecorder{r: bufio.NewReaderSize(r, 64<<10)}
	// The reader parses the member's header and nothing past it: what it
	// took from rec is the header, byte for byte.
	zr, err := gzip.NewReader(rec)
	if err != nil {
		return false, nil
	}
	var items int
	var mtime int64
	if n, err := fmt.Sscanf(zr.Comment, segmentComment, &items, &mtime); err != nil || n != 2 ||
		mtime != w.mtime.UnixNano() || items < 0 {
		return false, nil
	}
	if err := w.endMember(); err != nil {
		return false, err
	}
	if _, err := w.out.Write(rec.header); err != nil {
		return false, fmt.Errorf("copy segment: %w", err)
	}
	if _, err := io.Copy(w.out, rec.r); err != nil {
		return false, fmt.Errorf("copy segment: %w", err)
	}
	w.Items += items
	return true, nil
}

// headerRecorder keeps every byte a gzip reader takes through it.
type headerRecorder struct {
	r      *bufio.Reader
	header []byte
}

func (h *headerRecorder) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.header = append(h.header, p[:n]...)
	return n, err
}

func (h *headerRecorder) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.header = append(h.header, b)
	}
	return b, err
}
