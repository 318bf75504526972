package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// RawLister pages through LIST responses keeping each item as the JSON the
// server sent. Decoding items into maps (as the dynamic client does) costs
// more than the request itself; a backup only needs the bytes plus a few
// metadata fields.
type RawLister struct{ client *rest.RESTClient }

// NewRawLister returns a lister using cfg.
func NewRawLister(cfg *rest.Config) (*RawLister, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = nil
	cfg.APIPath = ""
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cfg.AcceptContentTypes = "application/json"
	cfg.ContentType = "application/json"
	c, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("REST client: %w", err)
	}
	return &RawLister{client: c}, nil
}

// Page is one page of a LIST.
type Page struct {
	Items     []Item
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
	body, err := req.DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return decodePage(body, r)
}

// Get returns one object's JSON; name is namespaced when ns is set.
func (l *RawLister) Get(ctx context.Context, r Resource, ns, name string) (*Item, error) {
	path := append(collectionPath(r, ns), name)
	body, err := l.client.Get().AbsPath(path...).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	it, err := decodeItem(body, r)
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

type rawList struct {
	Metadata struct {
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

type itemHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

func decodePage(body []byte, r Resource) (*Page, error) {
	var list rawList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode %s list: %w", r.GroupResource(), err)
	}
	page := &Page{Continue: list.Metadata.Continue, Items: make([]Item, 0, len(list.Items))}
	if list.Metadata.RemainingItemCount != nil {
		page.Remaining = *list.Metadata.RemainingItemCount
	}
	for _, raw := range list.Items {
		it, err := decodeItem(raw, r)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, it)
	}
	return page, nil
}

func decodeItem(raw []byte, r Resource) (Item, error) {
	var head itemHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return Item{}, fmt.Errorf("decode %s item: %w", r.GroupResource(), err)
	}
	if bytes.IndexByte(raw, '\n') >= 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return Item{}, fmt.Errorf("compact %s item: %w", r.GroupResource(), err)
		}
		raw = buf.Bytes()
	}
	// Items of a list carry no apiVersion/kind of their own; a stored
	// object must, so it can be restored on its own.
	if head.Kind == "" || head.APIVersion == "" {
		prefix := fmt.Sprintf(`{"apiVersion":%q,"kind":%q`, r.GVR.GroupVersion().String(), r.Kind)
		rest := bytes.TrimSpace(raw)[1:]
		rest = bytes.TrimLeft(rest, " \t\r\n")
		withType := make([]byte, 0, len(prefix)+len(rest)+1)
		withType = append(withType, prefix...)
		if len(rest) > 0 && rest[0] != '}' {
			withType = append(withType, ',')
		}
		raw = append(withType, rest...)
	}
	return Item{Raw: raw, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, Labels: head.Metadata.Labels}, nil
}
