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
	// Version is set for entries under a "<version>-preferredversion" folder.
	Version   string
	Namespace string
	Name      string
	Data      []byte
}

// Walk calls fn for every object file in the tarball read from r and
// returns the format version found in metadata/version.
func Walk(r io.Reader, fn func(Entry) error) (format string, err error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return "", fmt.Errorf("not a gzip stream: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return format, nil
		}
		if err != nil {
			return format, fmt.Errorf("corrupt tarball: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return format, fmt.Errorf("corrupt tarball at %s: %w", hdr.Name, err)
		}
		if hdr.Name == "metadata/version" {
			format = strings.TrimSpace(string(data))
			continue
		}
		e, ok := parsePath(hdr.Name)
		if !ok {
			continue
		}
		e.Data = data
		if err := fn(e); err != nil {
			return format, err
		}
	}
}

func parsePath(p string) (Entry, bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != "resources" || !strings.HasSuffix(p, ".json") {
		return Entry{}, false
	}
	e := Entry{Path: p, GroupResource: parts[1]}
	rest := parts[2:]
	if strings.HasSuffix(rest[0], PreferredVersionSuffix) {
		e.Version = strings.TrimSuffix(rest[0], PreferredVersionSuffix)
		rest = rest[1:]
	}
	switch {
	case len(rest) == 3 && rest[0] == "namespaces":
		e.Namespace, e.Name = rest[1], strings.TrimSuffix(rest[2], ".json")
	case len(rest) == 2 && rest[0] == "cluster":
		e.Name = strings.TrimSuffix(rest[1], ".json")
	default:
		return Entry{}, false
	}
	return e, true
}
