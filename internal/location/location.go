// Package location opens a backup location by URL and knows where each
// piece of a backup lives inside it. It is the only place that spells out
// object keys, so the layout in docs/operations.md's "Backup locations" is written down once.
package location

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// locations
	_ "gocloud.dev/blob/fileblob"  // file:// locations
	_ "gocloud.dev/blob/gcsblob"   // gs:// locations
	_ "gocloud.dev/blob/s3blob"    // s3:// locations, MinIO included
	"gocloud.dev/gcerrors"

	"github.com/cairn-backup/cairn/internal/sealing"
)

// ErrNotFound is returned when an object does not exist in the location.
var ErrNotFound = errors.New("not found in backup location")

// Location is an opened backup location.
type Location struct {
	URL    string
	bucket *blob.Bucket
	// stages: a file location, whose writes stage beside their keys.
	stages  bool
	keyring *sealing.Keyring
	// lock, when set, is written with every object of a finished backup.
	lock *Lock
	// sealedOnly refuses to read in plain what a keyring would have
	// encrypted (see SealedOnly).
	sealedOnly bool
}

// SealedOnly returns the location reading only encrypted objects where
// its key would have encrypted them: a plain one is sealing.ErrPlaintext.
// A location without a key is returned as it is. Close the original, not
// the copy.
func (l *Location) SealedOnly() *Location {
	if l.keyring == nil {
		return l
	}
	c := *l
	c.sealedOnly = true
	return &c
}

// plainDocuments stay readable without the key: they are what listing a
// location reads, and they record which key encrypted the rest. They hold
// names, times, counts and phases, never a cluster's objects; the
// manifest holds the digests of the encrypted objects, checked without
// the key.
var plainDocuments = map[string]bool{
	"backup.json": true, "restore.json": true, "snapshot.json": true, "velero-backup.json": true, "manifest.json": true,
}

// sealed reports whether what is written to key is encrypted.
func (l *Location) sealed(key string) bool {
	return l.keyring != nil && !plainDocuments[path.Base(key)]
}

// KeyID is the ID of the key that encrypts what is written here, "" when
// nothing is.
func (l *Location) KeyID() string {
	if l.keyring == nil {
		return ""
	}
	return l.keyring.ID()
}

// fileOptions are the fileblob options a file location gets unless its
// URL sets them: create the directory, private directories, no sidecar
// metadata files, and no staging in $TMPDIR (a killed writer leaves no
// copy of a backup where other users may look, and the final rename
// stays on one file system).
var fileOptions = []struct{ key, value string }{
	{"create_dir", "true"}, {"dir_file_mode", "0700"}, {"metadata", "skip"}, {"no_tmp_dir", "true"},
}

// Normalize turns a bare directory path into a file:// URL and adds the
// fileblob options cairn relies on (create the directory, private
// directories, no sidecar files, no staging in $TMPDIR).
func Normalize(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("backup location URL is empty")
	}
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", fmt.Errorf("backup location %q: %w", raw, err)
		}
		raw = "file://" + filepath.ToSlash(abs)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("backup location %q is not a URL: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		// file://dir/x parses as host "dir", path "/x": it would write to
		// /x. Only file:///absolute/path is meant.
		if u.Host != "" || u.Path == "" || !filepath.IsAbs(u.Path) {
			return "", fmt.Errorf("backup location %q: a file:// URL needs an absolute path, such as file:///var/lib/cairn/location", raw)
		}
		q := u.Query()
		for _, o := range fileOptions {
			if !q.Has(o.key) {
				q.Set(o.key, o.value)
			}
		}
		u.RawQuery = q.Encode()
	case "s3", "gs", "azblob", "mem":
	default:
		return "", fmt.Errorf("backup location %q: unsupported scheme %q (use file://, s3://, gs:// or azblob://)", raw, u.Scheme)
	}
	return u.String(), nil
}

// Display is a location URL as a user wrote it: without the file options
// Normalize adds.
func Display(normalized string) string {
	u, err := url.Parse(normalized)
	if err != nil || u.Scheme != "file" {
		return normalized
	}
	q := u.Query()
	for _, o := range fileOptions {
		if q.Get(o.key) == o.value {
			q.Del(o.key)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Opener opens locations the way a process is configured to.
type Opener struct {
	// Keyring encrypts every object but the metadata documents, and
	// decrypts what is read; nil writes in plain and cannot read what was
	// encrypted.
	Keyring *sealing.Keyring
	// CredentialDirs maps a location's normalized URL to the directory of
	// its own credentials (Catalog.CredentialDirs); a location not in it
	// takes the process environment's.
	CredentialDirs map[string]string
	// Locks maps a location's normalized URL to its immutability
	// (Catalog.Locks).
	Locks map[string]Lock
}

// Lock is the immutability of the location at rawURL, nil when it has
// none.
func (o *Opener) Lock(rawURL string) *Lock {
	if o == nil || len(o.Locks) == 0 {
		return nil
	}
	normalized, err := Normalize(rawURL)
	if err != nil {
		return nil
	}
	if l, ok := o.Locks[normalized]; ok {
		return &l
	}
	return nil
}

// KeyID is the ID of the key that encrypts, "" when nothing is encrypted.
func (o *Opener) KeyID() string {
	if o == nil || o.Keyring == nil {
		return ""
	}
	return o.Keyring.ID()
}

// Open opens the location at rawURL.
func (o *Opener) Open(ctx context.Context, rawURL string) (*Location, error) {
	if dir := o.credentialDir(rawURL); dir != "" {
		normalized, err := Normalize(rawURL)
		if err != nil {
			return nil, err
		}
		vars, err := readCredentials(dir)
		if err != nil {
			return nil, err
		}
		b, err := openS3(ctx, normalized, vars.get)
		if err != nil {
			return nil, err
		}
		return &Location{URL: normalized, bucket: b, keyring: o.Keyring, lock: o.Lock(rawURL)}, nil
	}
	loc, err := OpenPlain(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	if o != nil {
		loc.keyring = o.Keyring
		loc.lock = o.Lock(rawURL)
	}
	return loc, nil
}

// OpenPlain opens the location at rawURL without a keyring: it writes in
// plain, as Velero does. Processes open locations through their Opener.
func OpenPlain(ctx context.Context, rawURL string) (*Location, error) {
	normalized, err := Normalize(rawURL)
	if err != nil {
		return nil, err
	}
	file := strings.HasPrefix(normalized, "file://")
	if file {
		u, _ := url.Parse(normalized)
		if err := os.MkdirAll(u.Path, 0o700); err != nil {
			return nil, fmt.Errorf("backup location %s: %w", rawURL, err)
		}
	}
	b, err := blob.OpenBucket(ctx, normalized)
	if err != nil {
		return nil, fmt.Errorf("open backup location %s: %w", rawURL, err)
	}
	return &Location{URL: normalized, bucket: b, stages: file}, nil
}

// Close releases the location's resources.
func (l *Location) Close() error { return l.bucket.Close() }

// CheckWritable writes, reads back and deletes a probe object, so that a
// location that cannot be written is reported before any work starts.
func (l *Location) CheckWritable(ctx context.Context) error {
	const key = ".cairn-probe"
	if err := l.bucket.WriteAll(ctx, key, []byte("ok"), nil); err != nil {
		return fmt.Errorf("backup location %s is not writable: %w", l.URL, err)
	}
	if _, err := l.bucket.ReadAll(ctx, key); err != nil {
		return fmt.Errorf("backup location %s is not readable: %w", l.URL, err)
	}
	if err := l.bucket.Delete(ctx, key); err != nil {
		return fmt.Errorf("backup location %s: delete probe: %w", l.URL, err)
	}
	return nil
}

// Writer writes one object. Nothing is visible under its key until Close
// returns without error; Abort discards what was written.
type Writer struct {
	blob *blob.Writer
	// to is where Write goes: the blob, or the sealer in front of it.
	to     io.Writer
	seal   io.WriteCloser
	cancel context.CancelFunc
}

// Write writes p to the object.
func (w *Writer) Write(p []byte) (int, error) { return w.to.Write(p) }

// Close commits the object.
func (w *Writer) Close() error {
	if w.seal != nil {
		if err := w.seal.Close(); err != nil {
			w.Abort()
			return fmt.Errorf("encrypt: %w", err)
		}
	}
	defer w.cancel()
	return w.blob.Close()
}

// Abort discards the object: a blob writer whose context is canceled
// before Close never becomes visible.
func (w *Writer) Abort() {
	w.cancel()
	_ = w.blob.Close()
}

// NewWriter opens key for writing, so a crash never leaves a torn object.
// Unless key is a metadata document, what is written is encrypted when
// the location has a keyring.
func (l *Location) NewWriter(ctx context.Context, key string) (*Writer, error) {
	wctx, cancel := context.WithCancel(ctx)
	bw, err := l.bucket.NewWriter(wctx, key, l.writerOptions(key))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("write %s: %w", key, err)
	}
	w := &Writer{blob: bw, to: bw, cancel: cancel}
	if l.sealed(key) {
		if w.seal, err = l.keyring.Seal(bw); err != nil {
			w.Abort()
			return nil, fmt.Errorf("write %s: %w", key, err)
		}
		w.to = w.seal
	}
	return w, nil
}

// NewReader opens key for reading, decrypting it when it was encrypted;
// ErrNotFound when it does not exist. Reading an encrypted object without
// its key fails with a *sealing.KeyError.
func (l *Location) NewReader(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := l.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrapNotFound(key, err)
	}
	plain, err := l.open(key, r)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: %w", key, err), r.Close())
	}
	return readCloser{Reader: plain, Closer: r}, nil
}

// open is what stored bytes hold in plain: decrypted, when they were
// encrypted.
func (l *Location) open(key string, stored io.Reader) (io.Reader, error) {
	if l.sealedOnly && l.sealed(key) {
		return sealing.OpenSealed(stored, l.keyring)
	}
	return sealing.Open(stored, l.keyring)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// WriteAll writes data to key atomically. An object store is sent the
// data's MD5 to check what it received; encrypted data is written as it
// is sealed, and a file location, with no transport to guard, without
// hashing every byte twice (a quarter of a large collect's CPU).
func (l *Location) WriteAll(ctx context.Context, key string, data []byte) error {
	if l.sealed(key) || l.stages {
		w, err := l.NewWriter(ctx, key)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			w.Abort()
			return fmt.Errorf("write %s: %w", key, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		return nil
	}
	if err := l.bucket.WriteAll(ctx, key, data, l.writerOptions(key)); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// ReadAll reads key; ErrNotFound when it does not exist.
func (l *Location) ReadAll(ctx context.Context, key string) ([]byte, error) {
	r, err := l.NewReader(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return data, nil
}

// ErrTooLarge is an object larger than its reader accepts.
var ErrTooLarge = errors.New("larger than the limit")

// ReadAtMost reads key, which must hold at most max bytes (an object from
// a location may be hostile); ErrNotFound when it does not exist, an error
// wrapping ErrTooLarge when it is larger.
func (l *Location) ReadAtMost(ctx context.Context, key string, max int64) ([]byte, error) {
	r, err := l.NewReader(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w of %d bytes", key, ErrTooLarge, max)
	}
	return data, nil
}

// WriteJSON writes v as indented JSON to key atomically.
func (l *Location) WriteJSON(ctx context.Context, key string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return l.WriteAll(ctx, key, append(data, '\n'))
}

// ReadJSON decodes the JSON object at key into v.
func (l *Location) ReadJSON(ctx context.Context, key string, v any) error {
	data, err := l.ReadAll(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	return nil
}

// Exists reports whether key exists.
func (l *Location) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := l.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", key, err)
	}
	return ok, nil
}

// Size returns the size of key in bytes.
func (l *Location) Size(ctx context.Context, key string) (int64, error) {
	attrs, err := l.bucket.Attributes(ctx, key)
	if err != nil {
		return 0, wrapNotFound(key, err)
	}
	return attrs.Size, nil
}

// Keys lists every key under prefix, in lexical order. A file location's
// writes under way (or cut short by a kill) are not keys.
func (l *Location) Keys(ctx context.Context, prefix string) ([]string, error) {
	return l.keys(ctx, prefix, false)
}

func (l *Location) keys(ctx context.Context, prefix string, withStaging bool) ([]string, error) {
	return l.list(ctx, &blob.ListOptions{Prefix: prefix}, func(obj *blob.ListObject) (string, bool) {
		return obj.Key, withStaging || !l.staging(obj.Key)
	})
}

// ModTimes lists every key under prefix with the time it was last
// written, as Keys lists the keys.
func (l *Location) ModTimes(ctx context.Context, prefix string) (map[string]time.Time, error) {
	seen := map[string]time.Time{}
	keys, err := l.list(ctx, &blob.ListOptions{Prefix: prefix}, func(obj *blob.ListObject) (string, bool) {
		seen[obj.Key] = obj.ModTime
		return obj.Key, !l.staging(obj.Key)
	})
	if err != nil {
		return nil, err
	}
	// Only the last listing's keys: one that raced a deletion starts over.
	out := make(map[string]time.Time, len(keys))
	for _, k := range keys {
		out[k] = seen[k]
	}
	return out, nil
}

// stagingFile is how fileblob names a write under way beside its key
// (no_tmp_dir): <key>.<nanoseconds in hex>.tmp.
var stagingFile = regexp.MustCompile(`\.[0-9a-f]+\.tmp$`)

func (l *Location) staging(key string) bool {
	return l.stages && strings.HasSuffix(key, ".tmp") && stagingFile.MatchString(key)
}

// Dirs lists the immediate "sub-directories" of prefix (which must end in
// "/"), returning their names without the prefix or trailing slash.
func (l *Location) Dirs(ctx context.Context, prefix string) ([]string, error) {
	return l.DirsStartingWith(ctx, prefix, "")
}

// DirsStartingWith lists the sub-directories of prefix whose names start
// with start: the store lists only what it is asked for.
func (l *Location) DirsStartingWith(ctx context.Context, prefix, start string) ([]string, error) {
	return l.list(ctx, &blob.ListOptions{Prefix: prefix + start, Delimiter: "/"}, func(obj *blob.ListObject) (string, bool) {
		return strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/"), obj.IsDir
	})
}

// listRestartWindow bounds how long a listing that races deletions keeps
// starting over: a file location walks its directory tree, and a file
// removed under the walk (a run's log chunks at its end) fails it with
// NotFound. A count would not do: a busy deleter on a loaded machine can
// win several walks in a row.
const listRestartWindow = time.Minute

// list returns what keep makes of each object listed with opts.
func (l *Location) list(ctx context.Context, opts *blob.ListOptions, keep func(*blob.ListObject) (string, bool)) ([]string, error) {
	giveUp := time.Now().Add(listRestartWindow)
	for {
		var out []string
		it := l.bucket.List(opts)
		var err error
		for {
			var obj *blob.ListObject
			if obj, err = it.Next(ctx); err != nil {
				break
			}
			if v, ok := keep(obj); ok {
				out = append(out, v)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if gcerrors.Code(err) != gcerrors.NotFound || time.Now().After(giveUp) || ctx.Err() != nil {
			return nil, fmt.Errorf("list %s: %w", opts.Prefix, err)
		}
	}
}

// Delete deletes key; a missing key is not an error.
func (l *Location) Delete(ctx context.Context, key string) error {
	if err := l.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// CopyTo streams key into w.
func (l *Location) CopyTo(ctx context.Context, key string, w io.Writer) error {
	r, err := l.NewReader(ctx, key)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read only
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	return nil
}

func wrapNotFound(key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return fmt.Errorf("read %s: %w", key, err)
}

// ReadLines calls fn for every newline-terminated line of key, one at a
// time, so memory does not grow with the object. fn may keep a line.
func (l *Location) ReadLines(ctx context.Context, key string, fn func(line []byte) error) error {
	return l.readLines(ctx, key, false, fn)
}

// ReadLinesTransient is ReadLines for an fn that keeps no line past its
// return: the lines are read into one buffer, not copied one by one.
func (l *Location) ReadLinesTransient(ctx context.Context, key string, fn func(line []byte) error) error {
	return l.readLines(ctx, key, true, fn)
}

func (l *Location) readLines(ctx context.Context, key string, reuse bool, fn func(line []byte) error) error {
	r, err := l.NewReader(ctx, key)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read only
	return eachLine(r, reuse, fn)
}

func eachLine(r io.Reader, reuse bool, fn func([]byte) error) error {
	br := newLineReader(r, reuse)
	for {
		line, err := br.next()
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
