// Package datatree writes test data sets (a few large random files, many
// small ones, nested directories, a symlink, varied modes, a sparse file)
// and digests trees so tests and benchmarks can say two trees are the
// same, byte for byte and mode for mode.
package datatree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// Spec is the shape of a data set.
type Spec struct {
	LargeFiles int
	LargeSize  int64
	SmallFiles int
	SmallSize  int
	// Seed makes the content reproducible.
	Seed uint64
	// NoSparse leaves out the sparse file, so every byte is data.
	NoSparse bool
}

// Write creates the data set under dir and returns its total file bytes.
func Write(dir string, s Spec) (int64, error) {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	var total int64
	for i := range s.LargeFiles {
		n, err := writeRandom(filepath.Join(dir, "large", fmt.Sprintf("blob-%02d.bin", i)), s.LargeSize, rng, 0o644)
		if err != nil {
			return total, err
		}
		total += n
	}
	for i := range s.SmallFiles {
		mode := fs.FileMode(0o644)
		if i%7 == 0 {
			mode = 0o600
		}
		if i%11 == 0 {
			mode = 0o755
		}
		p := filepath.Join(dir, "small", fmt.Sprintf("d%03d", i/200), fmt.Sprintf("f%05d.txt", i))
		n, err := writeRandom(p, int64(1+rng.IntN(max(1, s.SmallSize))), rng, mode)
		if err != nil {
			return total, err
		}
		total += n
	}
	if s.LargeFiles > 0 {
		if err := os.Symlink("large/blob-00.bin", filepath.Join(dir, "latest")); err != nil {
			return total, err
		}
	}
	if s.NoSparse {
		return total, nil
	}
	// A sparse file: 1 MiB of data after a 16 MiB hole.
	sparse := filepath.Join(dir, "sparse.img")
	f, err := os.Create(sparse)
	if err != nil {
		return total, err
	}
	if _, err := f.Seek(16<<20, io.SeekStart); err != nil {
		return total, errors.Join(err, f.Close())
	}
	if _, err := io.CopyN(f, randReader{rng}, 1<<20); err != nil {
		return total, errors.Join(err, f.Close())
	}
	return total + 17<<20, f.Close()
}

func writeRandom(p string, size int64, rng *rand.Rand, mode fs.FileMode) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.CopyN(f, randReader{rng}, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(p, mode)
	}
	return n, err
}

type randReader struct{ rng *rand.Rand }

func (r randReader) Read(p []byte) (int, error) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.rng.Uint64()
		for j := range 8 {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(p) &^ 7; i < len(p); i++ {
		p[i] = byte(r.rng.Uint32())
	}
	return len(p), nil
}

// Digest maps every path under dir (relative, slash-separated) to its
// type, mode and content hash, or link target. Two trees with equal
// digests hold the same data.
func Digest(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[key] = "link " + target
		case info.IsDir():
			out[key] = fmt.Sprintf("dir %o", info.Mode().Perm())
		default:
			sum, err := hashFile(p)
			if err != nil {
				return err
			}
			out[key] = fmt.Sprintf("file %o %d %s", info.Mode().Perm(), info.Size(), sum)
		}
		return nil
	})
	return out, err
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Diff lists the differences between two digests, at most max of them.
func Diff(want, got map[string]string, limit int) []string {
	var out []string
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if want[k] != got[k] {
			out = append(out, fmt.Sprintf("%s: want %q, got %q", k, want[k], got[k]))
			if len(out) >= limit {
				out = append(out, "...")
				break
			}
		}
	}
	return out
}

// Bytes is the total size of the regular files under dir.
func Bytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}
