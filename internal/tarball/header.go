package tarball

import (
	"archive/tar"
	"time"
)

// A tarball of a million objects has two million entries, and
// archive/tar decides each header's format anew (validating every field,
// formatting each number through strings): that was half of finalizing's
// own CPU. Every entry here differs from the others only in name and
// size, so a USTAR header is stamped from a template instead, byte for
// byte what archive/tar writes for the same header. Anything the
// template cannot hold (a long or non-ASCII name, a huge size) goes
// through archive/tar as before.

const (
	blockSize   = 512
	nameField   = 100
	sizeOffset  = 124
	sizeDigits  = 11 // octal digits of the 12-byte size field, then NUL
	checkOffset = 148
	maxOctal11  = 1<<33 - 1 // the largest number 11 octal digits hold
)

// headerTemplate is a regular file's USTAR header with mode 0644, the
// writer's mtime and no name or size.
type headerTemplate struct {
	block [blockSize]byte
	sum   int64 // of the block with the checksum field as spaces
}

// newHeaderTemplate builds the template with archive/tar itself, so the
// fields it fills are formatted exactly as archive/tar formats them; ok
// is false when mtime does not fit a USTAR header.
func newHeaderTemplate(mtime time.Time) (t headerTemplate, ok bool) {
	secs := mtime.Round(time.Second).Unix()
	if secs < 0 || secs > maxOctal11 {
		return t, false
	}
	var raw recordingWriter
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(fileHeader("x", 0, mtime)); err != nil || len(raw.b) != blockSize ||
		string(raw.b[257:265]) != "ustar\x0000" {
		return t, false
	}
	copy(t.block[:], raw.b)
	clear(t.block[:nameField])
	clear(t.block[sizeOffset : sizeOffset+sizeDigits+1])
	clear(t.block[checkOffset : checkOffset+8])
	for i, c := range t.block {
		if i >= checkOffset && i < checkOffset+8 {
			c = ' '
		}
		t.sum += int64(c)
	}
	return t, true
}

// fits says whether an entry of this name and size can be stamped: what
// archive/tar would write as a plain USTAR header without a prefix.
func fits(name []byte, size int) bool {
	if len(name) == 0 || len(name) > nameField || int64(size) > maxOctal11 {
		return false
	}
	for _, c := range name {
		if c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}

// stamp fills blk with the header of an entry; fits must hold.
func (t *headerTemplate) stamp(blk *[blockSize]byte, name []byte, size int) {
	*blk = t.block
	sum := t.sum
	copy(blk[:], name)
	for _, c := range name {
		sum += int64(c)
	}
	field := blk[sizeOffset : sizeOffset+sizeDigits]
	for i := sizeDigits - 1; i >= 0; i-- {
		c := byte('0' + size&7)
		field[i] = c
		sum += int64(c)
		size >>= 3
	}
	check := blk[checkOffset : checkOffset+8]
	for i := 5; i >= 0; i-- {
		check[i] = byte('0' + sum&7)
		sum >>= 3
	}
	check[6], check[7] = 0, ' '
}

type recordingWriter struct{ b []byte }

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.b = append(r.b, p...)
	return len(p), nil
}
