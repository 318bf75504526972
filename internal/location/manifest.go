package location

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
)

// ErrChecksum is an object that is not what the backup's manifest says
// it stored: another size or another SHA-256.
var ErrChecksum = errors.New("does not match the backup's manifest")

// Digest is an object's size and SHA-256 as stored: of the encrypted
// bytes when it is encrypted, so it is checked without the key.
type Digest struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest is manifest.json: the digest of every object a backup stored,
// by name within the backup's folder.
type Manifest struct {
	Algorithm string            `json:"algorithm"`
	Objects   map[string]Digest `json:"objects"`
}

// maxManifestBytes bounds a manifest read from a location.
const maxManifestBytes = 1 << 20

// Digest reads key as stored and returns its digest; progress, when not
// nil, is told the bytes read so far.
func (l *Location) Digest(ctx context.Context, key string, progress func(int64)) (Digest, error) {
	r, err := l.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return Digest{}, wrapNotFound(key, err)
	}
	defer func() { _ = r.Close() }() // read only
	h := sha256.New()
	// 1 MiB reads: progress (a heartbeat) is told once per MiB.
	n, err := io.CopyBuffer(h, &progressReader{r: r, progress: progress}, make([]byte, 1<<20))
	if err != nil {
		return Digest{}, fmt.Errorf("read %s: %w", key, err)
	}
	return Digest{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// progressReader tells progress, when not nil, the bytes read so far.
type progressReader struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.progress != nil && n > 0 {
		p.progress(p.n)
	}
	return n, err
}

// WriteManifest digests those of keys that exist, writes the manifest
// beside them (in plain, like backup.json) and returns the SHA-256 of
// the manifest's own bytes, for backup.json to record.
func (l *Location) WriteManifest(ctx context.Context, b BackupKeys, keys []string, progress func(int64)) (string, error) {
	m := Manifest{Algorithm: "sha256", Objects: map[string]Digest{}}
	var done int64
	for _, key := range keys {
		d, err := l.Digest(ctx, key, func(n int64) {
			if progress != nil {
				progress(done + n)
			}
		})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		done += d.Size
		m.Objects[path.Base(key)] = d
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", b.Manifest(), err)
	}
	data = append(data, '\n')
	if err := l.WriteAll(ctx, b.Manifest(), data); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// ReadManifest reads a backup's manifest and checks it against the
// SHA-256 backup.json recorded; a manifest that differs wraps ErrChecksum.
func (l *Location) ReadManifest(ctx context.Context, b BackupKeys, sha256Hex string) (*Manifest, error) {
	data, err := l.ReadAtMost(ctx, b.Manifest(), maxManifestBytes)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != sha256Hex {
		return nil, fmt.Errorf("%s: %w (backup.json records another SHA-256)", b.Manifest(), ErrChecksum)
	}
	var m Manifest
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", b.Manifest(), ErrChecksum, err)
	}
	return &m, nil
}

// Names are the manifest's object names, sorted.
func (m *Manifest) Names() []string {
	names := make([]string, 0, len(m.Objects))
	for n := range m.Objects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewCheckedReader is NewReader of an object that must match want: the
// stored bytes are hashed as they are read, and reading past want's size,
// or to an end that does not match, fails with an error wrapping
// ErrChecksum. The check is complete only once the reader reached EOF.
func (l *Location) NewCheckedReader(ctx context.Context, key string, want Digest) (io.ReadCloser, error) {
	r, err := l.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, wrapNotFound(key, err)
	}
	checked := &checkedReader{r: r, key: key, want: want, h: sha256.New()}
	plain, err := l.open(key, checked)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: %w", key, err), r.Close())
	}
	return readCloser{Reader: plain, Closer: r}, nil
}

type checkedReader struct {
	r    io.Reader
	key  string
	want Digest
	h    hash.Hash
	n    int64
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.n > c.want.Size {
		return n, fmt.Errorf("%s: %w: longer than its %d bytes", c.key, ErrChecksum, c.want.Size)
	}
	if errors.Is(err, io.EOF) {
		if c.n != c.want.Size {
			return n, fmt.Errorf("%s: %w: %d bytes, not %d", c.key, ErrChecksum, c.n, c.want.Size)
		}
		if sum := hex.EncodeToString(c.h.Sum(nil)); sum != c.want.SHA256 {
			return n, fmt.Errorf("%s: %w: SHA-256 %s, not %s", c.key, ErrChecksum, sum, c.want.SHA256)
		}
	}
	return n, err
}
