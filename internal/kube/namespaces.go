package kube

import (
	"context"
	"fmt"
	"sort"

	"github.com/cairn-backup/cairn/internal/filter"
)

// NamespacesResource is the core Namespace type.
var NamespacesResource = Resource{Kind: "Namespace"}

func init() {
	NamespacesResource.GVR.Version = "v1"
	NamespacesResource.GVR.Resource = "namespaces"
}

// SelectNamespaces lists the cluster's namespaces and returns, sorted, the
// ones the globs select.
func SelectNamespaces(ctx context.Context, l Lister, g filter.Globs) ([]string, error) {
	var names []string
	opts := ListOptions{Limit: 1000}
	for {
		page, err := l.List(ctx, NamespacesResource, opts)
		if err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		for _, it := range page.Items {
			if g.Match(it.Name) {
				names = append(names, it.Name)
			}
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	sort.Strings(names)
	return names, nil
}
