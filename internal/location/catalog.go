package location

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Catalog is the set of locations an operator allows requests to use, by
// name. A caller of the API names one of them; a raw URL could send the
// cluster's Secrets to a bucket of the caller's, or the worker's requests
// to any address, so it is refused unless the operator allows URLs.
type Catalog struct {
	// Default is the name of the location used when a request names none.
	Default   string
	named     map[string]Entry
	allowURLs bool
}

// Entry is one named location.
type Entry struct {
	Name, URL string
	// ReadOnly locations are restored from, never written by backups,
	// deleted from or expired, as a Velero read-only location.
	ReadOnly bool
	// Credentials, when set, is a directory holding this location's
	// credentials, one file per variable (AWS_ACCESS_KEY_ID, ...), as a
	// mounted Secret has them; they replace the process environment for
	// this location. Empty: the environment.
	Credentials string
}

// ErrNotAllowed is a location a request may not use.
var ErrNotAllowed = errors.New("location not allowed")

var locationName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// DefaultName names the default location when the operator gives it no
// name of its own.
const DefaultName = "default"

// ParseCatalog builds a catalog from the default location's URL (named
// "default") and specs of the form name=URL[;readonly][;credentials=DIR].
func ParseCatalog(defaultURL string, specs []string, allowURLs bool) (*Catalog, error) {
	c := &Catalog{Default: DefaultName, named: map[string]Entry{}, allowURLs: allowURLs}
	if defaultURL != "" {
		if err := c.add(Entry{Name: DefaultName, URL: defaultURL}); err != nil {
			return nil, err
		}
	}
	for _, spec := range specs {
		name, rest, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("location %q: want name=URL[;readonly][;credentials=DIR]", spec)
		}
		parts := strings.Split(rest, ";")
		e := Entry{Name: name, URL: parts[0]}
		for _, opt := range parts[1:] {
			switch key, value, _ := strings.Cut(opt, "="); {
			case opt == "readonly":
				e.ReadOnly = true
			case key == "credentials" && value != "":
				e.Credentials = value
			default:
				return nil, fmt.Errorf("location %s: unknown option %q (readonly, credentials=DIR)", name, opt)
			}
		}
		if err := c.add(e); err != nil {
			return nil, err
		}
	}
	if _, ok := c.named[c.Default]; !ok {
		return nil, fmt.Errorf("no default location: give its URL")
	}
	return c, nil
}

func (c *Catalog) add(e Entry) error {
	if !locationName.MatchString(e.Name) || len(e.Name) > 63 {
		return fmt.Errorf("location name %q: lowercase letters, digits and '-', at most 63", e.Name)
	}
	if _, dup := c.named[e.Name]; dup {
		return fmt.Errorf("location %s given twice", e.Name)
	}
	url, err := Normalize(e.URL)
	if err != nil {
		return fmt.Errorf("location %s: %w", e.Name, err)
	}
	e.URL = url
	if e.Credentials != "" && !strings.HasPrefix(url, "s3://") {
		return fmt.Errorf("location %s: credentials=DIR is for s3:// locations; gs:// and azblob:// take the environment's", e.Name)
	}
	c.named[e.Name] = e
	return nil
}

// CredentialDirs maps the URL of each location with credentials of its
// own to their directory, for an Opener.
func (c *Catalog) CredentialDirs() map[string]string {
	dirs := map[string]string{}
	for _, e := range c.named {
		if e.Credentials != "" {
			dirs[e.URL] = e.Credentials
		}
	}
	return dirs
}

// Entries are the named locations, by name.
func (c *Catalog) Entries() []Entry {
	var out []Entry
	for _, name := range c.Names() {
		out = append(out, c.named[name])
	}
	return out
}

// Names are the locations' names, sorted.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.named))
	for n := range c.named {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DefaultURL is the default location's URL.
func (c *Catalog) DefaultURL() string { return c.named[c.Default].URL }

// Resolve turns what a request names, a location's name or "" for the
// default, into its URL. A URL is taken when it is one of the catalog's,
// or when the operator allows URLs. write says the request writes
// backups there, which a read-only location refuses.
func (c *Catalog) Resolve(ref string, write bool) (string, error) {
	if ref == "" {
		ref = c.Default
	}
	e, ok := c.named[ref]
	if !ok && strings.Contains(ref, "://") {
		url, err := Normalize(ref)
		if err != nil {
			return "", err
		}
		if known, found := c.byURL(url); found {
			e, ok = known, true
		} else if c.allowURLs {
			return url, nil
		} else {
			return "", fmt.Errorf("%w: a location is named, not given as a URL (configured: %s)", ErrNotAllowed, strings.Join(c.Names(), ", "))
		}
	}
	if !ok {
		return "", fmt.Errorf("%w: unknown location %q (configured: %s)", ErrNotAllowed, ref, strings.Join(c.Names(), ", "))
	}
	if write && e.ReadOnly {
		return "", fmt.Errorf("%w: location %s is read-only", ErrNotAllowed, e.Name)
	}
	return e.URL, nil
}

// ReadOnlyURL says whether url is a read-only location of the catalog.
func (c *Catalog) ReadOnlyURL(url string) (string, bool) {
	e, ok := c.byURL(url)
	return e.Name, ok && e.ReadOnly
}

func (c *Catalog) byURL(url string) (Entry, bool) {
	for _, e := range c.named {
		if e.URL == url {
			return e, true
		}
	}
	return Entry{}, false
}
