package tarball

import (
	"archive/tar"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"io"
	"strings"
)

// Entry is one object file of a tarball.
type Entry struct {
	Path          string
	GroupResource string
	// Version is the API version of the folder the entry sits in: empty for
	// the version-less copy, set for "<version>-preferredversion" and for
	// the plain "<version>" folders Velero writes with its API group
	// versions feature.
	Version string
	// Preferred marks the "<version>-preferredversion" copy.
	Preferred bool
	Namespace string
	Name      string
	Data      []byte
}

// ErrCorrupt marks the errors of Walk for a stream that does not decode
// as a gzipped tar. Errors reading r itself and errors of fn are not
// marked: a retry may cure the first, and the second are the caller's.
var ErrCorrupt = errors.New("corrupt tarball")

// Limits bound what Walk reads of a tarball, which may be hostile: one
// object file is held in memory whole, and a small stream can decompress
// to a great deal.
type Limits struct {
	// EntryBytes is the largest file read (0: DefaultEntryBytes).
	EntryBytes int64
	// TotalBytes bounds the decompressed stream (0: DefaultTotalBytes).
	TotalBytes int64
}

// Kubernetes stores no object above about 1.5 MiB (etcd's request
// limit); the defaults leave ample room above what a real backup holds.
const (
	DefaultEntryBytes int64 = 16 << 20
	DefaultTotalBytes int64 = 256 << 30
)

func (l Limits) entry() int64 { return orDefault(l.EntryBytes, DefaultEntryBytes) }
func (l Limits) total() int64 { return orDefault(l.TotalBytes, DefaultTotalBytes) }

func orDefault(n, def int64) int64 {
	if n > 0 {
		return n
	}
	return def
}

// Walk calls fn for every object file in the tarball read from r and
// returns the format version found in metadata/version. A file or a
// stream past limits is ErrCorrupt; files that are neither objects nor
// the version are skipped unread.
func Walk(r io.Reader, limits Limits, fn func(Entry) error) (format string, err error) {
	return WalkWanted(r, limits, nil, fn)
}

// WalkWanted is Walk for the object files want accepts by their path
// (Data is not set yet when want sees an entry); the others are skipped
// unread. A nil want accepts every file.
func WalkWanted(r io.Reader, limits Limits, want func(Entry) bool, fn func(Entry) error) (format string, err error) {
	src := &sourceReader{r: r}
	fail := func(corrupt error) error {
		if src.err != nil {
			return fmt.Errorf("read tarball: %w", src.err)
		}
		return corrupt
	}
	gz, err := gzip.NewReader(src)
	if err != nil {
		return "", fail(fmt.Errorf("%w: not a gzip stream: %w", ErrCorrupt, err))
	}
	defer func() { _ = gz.Close() }() // read only
	total := &boundedReader{r: gz, left: limits.total()}
	tr := tar.NewReader(total)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// tar stops at its end marker; reading gzip to its end checks
			// the trailer, so a stream cut just before it is not whole.
			if _, err := io.Copy(io.Discard, gz); err != nil {
				return format, fail(fmt.Errorf("%w: %w", ErrCorrupt, err))
			}
			return format, nil
		}
		if err != nil {
			return format, fail(fmt.Errorf("%w: %w", ErrCorrupt, err))
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		e, isObject := parsePath(hdr.Name)
		isVersion := hdr.Name == "metadata/version"
		if !isObject && !isVersion {
			continue
		}
		if hdr.Size > limits.entry() {
			return format, fmt.Errorf("%w: %s holds %d bytes, more than the limit of %d", ErrCorrupt, hdr.Name, hdr.Size, limits.entry())
		}
		if isObject && want != nil && !want(e) {
			continue
		}
		// The size is bounded above; one buffer of it, not a growing one.
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return format, fail(fmt.Errorf("%w at %s: %w", ErrCorrupt, hdr.Name, err))
		}
		if isVersion {
			format = strings.TrimSpace(string(data))
			continue
		}
		e.Data = data
		if err := fn(e); err != nil {
			return format, err
		}
	}
}

// errTooLarge is a stream that decompresses past Limits.TotalBytes.
var errTooLarge = errors.New("it decompresses to more than the limit")

// boundedReader fails once more than left bytes were read through it.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// sourceReader remembers the first error of the underlying reader, to tell
// an I/O failure from a stream that does not decode.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// parsePath recognises the object paths of format 1.1.0:
//
//	resources/<gr>/namespaces/<ns>/<name>.json
//	resources/<gr>/cluster/<name>.json
//	resources/<gr>/<version>[-preferredversion]/namespaces/<ns>/<name>.json
//	resources/<gr>/<version>[-preferredversion]/cluster/<name>.json
//
// The version-less forms are tried first, so a namespace called "cluster"
// is not mistaken for a cluster-scoped object under a version "namespaces".
func parsePath(p string) (Entry, bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != "resources" || parts[1] == "" || !strings.HasSuffix(p, ".json") {
		return Entry{}, false
	}
	e := Entry{Path: p, GroupResource: parts[1]}
	rest := parts[2:]
	if !scoped(&e, rest) {
		version, preferred := strings.CutSuffix(rest[0], PreferredVersionSuffix)
		if version == "" || !scoped(&e, rest[1:]) {
			return Entry{}, false
		}
		e.Version, e.Preferred = version, preferred
	}
	if e.Name == "" {
		return Entry{}, false
	}
	return e, true
}

// scoped fills namespace and name from "namespaces/<ns>/<name>.json" or
// "cluster/<name>.json".
func scoped(e *Entry, rest []string) bool {
	switch {
	case len(rest) == 3 && rest[0] == "namespaces" && rest[1] != "":
		e.Namespace, e.Name = rest[1], strings.TrimSuffix(rest[2], ".json")
	case len(rest) == 2 && rest[0] == "cluster":
		e.Name = strings.TrimSuffix(rest[1], ".json")
	default:
		return false
	}
	return true
}
