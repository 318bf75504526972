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
	// Lock, when set, makes every finished backup in this s3:// location
	// immutable for its period (S3 Object Lock).
	Lock *Lock
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
			return nil, fmt.Errorf("location %q: want name=URL[;readonly][;credentials=DIR][;immutable=PERIOD]", spec)
		}
		e, err := parseEntry(name, rest)
		if err != nil {
			return nil, err
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

// parseEntry reads URL[;option...] of the location called name.
func parseEntry(name, spec string) (Entry, error) {
	parts := strings.Split(spec, ";")
	e := Entry{Name: name, URL: parts[0]}
	var mode LockMode
	for _, opt := range parts[1:] {
		var err error
		switch key, value, _ := strings.Cut(opt, "="); {
		case opt == "readonly":
			e.ReadOnly = true
		case key == "credentials" && value != "":
			e.Credentials = value
		case key == "immutable":
			e.Lock = &Lock{}
			e.Lock.Period, err = ParseLockPeriod(value)
		case key == "lock-mode":
			mode, err = ParseLockMode(value)
		default:
			err = fmt.Errorf("unknown option %q (readonly, credentials=DIR, immutable=PERIOD, lock-mode=compliance|governance)", opt)
		}
		if err != nil {
			return Entry{}, fmt.Errorf("location %s: %w", name, err)
		}
	}
	switch {
	case e.Lock != nil && mode != "":
		e.Lock.Mode = mode
	case e.Lock != nil:
		e.Lock.Mode = LockCompliance
	case mode != "":
		return Entry{}, fmt.Errorf("location %s: lock-mode goes with immutable=PERIOD", name)
	}
	return e, nil
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
	if e.Lock != nil && !strings.HasPrefix(url, "s3://") {
		return fmt.Errorf("location %s: immutable=PERIOD needs S3 Object Lock, so an s3:// location", e.Name)
	}
	if e.Lock != nil && e.ReadOnly {
		return fmt.Errorf("location %s: a read-only location writes nothing to lock; drop immutable or readonly", e.Name)
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

// Locks maps the URL of each immutable location to its lock, for an
// Opener.
func (c *Catalog) Locks() map[string]Lock {
	locks := map[string]Lock{}
	for _, e := range c.named {
		if e.Lock != nil {
			locks[e.URL] = *e.Lock
		}
	}
	return locks
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
