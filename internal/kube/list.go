package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/tidwall/gjson"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Lister reads objects as the JSON the API server sends.
type Lister interface {
	// List requests one page of r.
	List(ctx context.Context, r Resource, opts ListOptions) (*Page, error)
	// Get returns one object; name is namespaced when ns is set.
	Get(ctx context.Context, r Resource, ns, name string) (*Item, error)
}

var _ Lister = (*RawLister)(nil)

// RawLister pages through LIST responses keeping each item as the JSON the
// server sent. Decoding items into maps (as the dynamic client does) costs
// more than the request itself; a backup only needs the bytes plus a few
// metadata fields.
type RawLister struct {
	client *rest.RESTClient
	// pageBytes is the size of the last page read: the next one is read
	// into a buffer of about that size, not grown from 512 bytes by
	// doubling (each step a copy, all of them garbage).
	pageBytes atomic.Int64
}

// NewRawLister returns a lister using cfg.
func NewRawLister(cfg *rest.Config) (*RawLister, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	c, err := rawClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &RawLister{client: c}, nil
}

// Lister is a raw lister over these clients' connection and identity.
func (c *Clients) Lister() (*RawLister, error) {
	if c.raw != nil {
		return &RawLister{client: c.raw}, nil
	}
	return NewRawLister(c.Config)
}

// rawClient sends JSON to any path and leaves answers undecoded.
func rawClient(cfg *rest.Config, httpClient *http.Client) (*rest.RESTClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = nil
	cfg.APIPath = ""
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cfg.AcceptContentTypes = "application/json"
	cfg.ContentType = "application/json"
	c, err := rest.UnversionedRESTClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("REST client: %w", err)
	}
	return c, nil
}

// Page is one page of a LIST.
type Page struct {
	Items []Item
	// Lines are the items' JSON lines, each followed by a newline, in
	// order: what a part of the page stores when it keeps every item.
	// Nil in a page not read from an API server.
	Lines     []byte
	Continue  string
	Remaining int64
}

// Item is one object of a page: its JSON (with apiVersion and kind set)
// and the metadata filters look at.
type Item struct {
	Raw       []byte
	Name      string
	Namespace string
	Labels    map[string]string
}

// ListOptions are the paging and selection parameters of one request.
type ListOptions struct {
	Namespace     string
	Limit         int
	Continue      string
	LabelSelector string
	// Continued, when set, hears once where the next page starts (the
	// page's continue token, "" on the last page) as soon as the answer
	// shows it: before its items are read when the metadata comes first,
	// as an API server writes a built-in type's list, and otherwise just
	// before List returns the page. It runs on the goroutine that reads
	// the answer, and is not called when List fails before the token is
	// known.
	Continued func(token string)
}

// List requests one page of r.
func (l *RawLister) List(ctx context.Context, r Resource, opts ListOptions) (*Page, error) {
	req := l.client.Get().AbsPath(collectionPath(r, opts.Namespace)...)
	if opts.Limit > 0 {
		req = req.Param("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Continue != "" {
		req = req.Param("continue", opts.Continue)
	}
	if opts.LabelSelector != "" {
		req = req.Param("labelSelector", opts.LabelSelector)
	}
	body, told, err := l.readPage(ctx, req, opts.Continued)
	if err != nil {
		return nil, err
	}
	page, err := decodePage(body, r)
	if err != nil {
		return nil, err
	}
	if opts.Continued != nil && !told {
		opts.Continued(page.Continue)
	}
	return page, nil
}

// maxLead bounds the start of an answer looked at for the metadata: a
// list's kind, apiVersion and metadata take a few hundred bytes.
const maxLead = 64 << 10

// maxPageHint bounds the buffer a page is read into before its size is
// known; a larger page grows it.
const maxPageHint = 8 << 20

// readPage reads the answer to req whole. An answer the server refused
// is the API error its Status names. With continued, the start of the
// answer is looked at as it arrives: told says whether continued heard
// the page's continue token from there.
func (l *RawLister) readPage(ctx context.Context, req *rest.Request, continued func(string)) (body []byte, told bool, err error) {
	stream, err := req.Stream(ctx)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = stream.Close() }() // read only
	// A page of large objects does not make every later one as large.
	hint := min(l.pageBytes.Load(), maxPageHint)
	buf := make([]byte, 0, hint+hint/8+bytes.MinRead)
	lead := leadUnknown
	if continued == nil {
		lead = leadTooLate
	}
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, rerr := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if lead == leadUnknown && n > 0 {
			var meta string
			if meta, lead = leadingMetadata(unsafe.String(unsafe.SliceData(buf), len(buf))); lead == leadKnown {
				continued(strings.Clone(gjson.Get(meta, "continue").String()))
			}
			// The start is read again as it grows: past a bound, whatever
			// precedes the metadata waits for the end of the answer.
			if lead == leadUnknown && len(buf) > maxLead {
				lead = leadTooLate
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, false, fmt.Errorf("read %s: %w", req.URL().Path, rerr)
		}
	}
	l.pageBytes.Store(int64(len(buf)))
	return buf, lead == leadKnown, nil
}

// Get returns one object's JSON; name is namespaced when ns is set.
func (l *RawLister) Get(ctx context.Context, r Resource, ns, name string) (*Item, error) {
	path := append(collectionPath(r, ns), name)
	body, err := answer(l.client.Get().AbsPath(path...).Do(ctx))
	if err != nil {
		return nil, err
	}
	it, err := DecodeItem(body, r)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

func collectionPath(r Resource, ns string) []string {
	var p []string
	if r.GVR.Group == "" {
		p = []string{"/api", r.GVR.Version}
	} else {
		p = []string{"/apis", r.GVR.Group, r.GVR.Version}
	}
	if ns != "" && r.Namespaced {
		p = append(p, "namespaces", ns)
	}
	return append(p, r.GVR.Resource)
}

// decodePage splits a LIST response into items without decoding them:
// one validating pass over the body, one that finds each item, then only
// each item's metadata is looked at. A full json.Unmarshal of every item
// costs more than the request itself. The page's strings share body's
// memory: it is read as a string without a copy, and is not changed
// after.
func decodePage(body []byte, r Resource) (*Page, error) {
	if !gjson.ValidBytes(body) {
		return nil, fmt.Errorf("decode %s list: the API server sent invalid JSON", r.GroupResource())
	}
	doc := unsafe.String(unsafe.SliceData(body), len(body))
	parts, ok := splitList(doc)
	if !ok {
		return nil, fmt.Errorf("decode %s list: the API server sent no object", r.GroupResource())
	}
	page := &Page{Items: make([]Item, 0, len(parts.items))}
	if m := parts.metadata; m.end > m.start {
		meta := gjson.Parse(doc[m.start:m.end])
		page.Continue = meta.Get("continue").String()
		page.Remaining = meta.Get("remainingItemCount").Int()
	}
	prefix := typePrefix(r)
	// The items' lines go into one buffer per page, not one each; the
	// estimate leaves room for the prefix of items of a KiB or more.
	lines := make([]byte, 0, len(body)+len(body)/16)
	for _, sp := range parts.items {
		v := gjson.Parse(doc[sp.start:sp.end])
		if !v.IsObject() {
			return nil, fmt.Errorf("decode %s list: an item is not an object", r.GroupResource())
		}
		var it Item
		it, lines = itemInto(lines, v, body[sp.start:sp.end], prefix)
		page.Items = append(page.Items, it)
	}
	page.Lines = lines
	return page, nil
}

// DecodeItem reads one object of r's type from its JSON, as an item of a
// list is read: compact, with its apiVersion and kind.
func DecodeItem(raw []byte, r Resource) (Item, error) {
	if !gjson.ValidBytes(raw) || !gjson.ParseBytes(raw).IsObject() {
		return Item{}, fmt.Errorf("decode %s item: not a JSON object", r.GroupResource())
	}
	it, _ := itemInto(nil, gjson.ParseBytes(raw), raw, typePrefix(r))
	return it, nil
}

// typePrefix opens an object of r's type: what an item of a list, which
// carries no type of its own, is stored with.
func typePrefix(r Resource) []byte {
	return fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q`, r.GVR.GroupVersion().String(), r.Kind)
}

// itemInto returns one object, v parsed from raw, as a compact JSON line
// that carries its own apiVersion and kind (items of a list have none, but
// a stored object must be restorable on its own), with the metadata
// filters look at. The line, and a newline after it, is appended to
// lines, which it returns.
func itemInto(lines []byte, v gjson.Result, raw, prefix []byte) (Item, []byte) {
	meta := v.Get("metadata")
	it := Item{Name: meta.Get("name").String(), Namespace: meta.Get("namespace").String()}
	if labels := meta.Get("labels"); labels.IsObject() {
		it.Labels = map[string]string{}
		labels.ForEach(func(k, val gjson.Result) bool {
			it.Labels[k.String()] = val.String()
			return true
		})
	}
	if bytes.IndexByte(raw, '\n') >= 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			raw = buf.Bytes()
		}
	}
	start := len(lines)
	if hasTypeFields(v, raw) {
		lines = append(lines, raw...)
	} else {
		rest := bytes.TrimLeft(bytes.TrimSpace(raw)[1:], " \t\r\n")
		lines = append(lines, prefix...)
		if len(rest) > 0 && rest[0] != '}' {
			lines = append(lines, ',')
		}
		lines = append(lines, rest...)
	}
	// A full capacity: an append to one item's line cannot overwrite the
	// newline or the next line.
	it.Raw = lines[start:len(lines):len(lines)]
	return it, append(lines, '\n')
}

// hasTypeFields says whether an object carries its apiVersion and kind.
// Items of a built-in type's list never do, and asking gjson for a key an
// object lacks reads the whole object: a byte search (the API server
// writes keys unescaped) rules the keys out first.
func hasTypeFields(v gjson.Result, raw []byte) bool {
	if !bytes.Contains(raw, []byte(`"kind"`)) || !bytes.Contains(raw, []byte(`"apiVersion"`)) {
		return false
	}
	return v.Get("kind").String() != "" && v.Get("apiVersion").String() != ""
}
