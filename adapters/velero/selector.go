package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// selector is what a plugin action's AppliesTo selects, as Velero reads
// it: resources by name, name.group or kind (abbreviations such as "svc"
// need discovery, which the adapter does not do), namespaces, labels,
// each entry a glob ("team-*"). An empty list selects all; an item
// without a namespace is selected only when the namespaces are not
// narrowed.
type selector struct {
	includedResources, excludedResources   []string
	includedNamespaces, excludedNamespaces []string
	labels                                 labels.Selector
}

func newSelector(rs velero.ResourceSelector) (selector, error) {
	s := selector{includedResources: rs.IncludedResources, excludedResources: rs.ExcludedResources,
		includedNamespaces: rs.IncludedNamespaces, excludedNamespaces: rs.ExcludedNamespaces, labels: labels.Everything()}
	if rs.LabelSelector != "" {
		sel, err := labels.Parse(rs.LabelSelector)
		if err != nil {
			return s, fmt.Errorf("label selector %q: %w", rs.LabelSelector, err)
		}
		s.labels = sel
	}
	return s, nil
}

func (s selector) selects(r extension.Resource, namespace string, itemLabels map[string]string) bool {
	names := []string{r.Resource, r.Kind}
	if r.Group != "" {
		names = append(names, r.Resource+"."+r.Group)
	}
	if !listed(s.includedResources, names, true) || listed(s.excludedResources, names, false) {
		return false
	}
	everyNamespace := (len(s.includedNamespaces) == 0 || slices.Contains(s.includedNamespaces, "*")) && len(s.excludedNamespaces) == 0
	switch {
	case namespace == "" && !everyNamespace:
		return false
	case namespace != "" && (!listed(s.includedNamespaces, []string{namespace}, true) || listed(s.excludedNamespaces, []string{namespace}, false)):
		return false
	}
	return s.labels.Matches(labels.Set(itemLabels))
}

// listed reports whether one of names matches an entry of list, a glob
// compared without case; an empty list answers empty.
func listed(list, names []string, empty bool) bool {
	if len(list) == 0 {
		return empty
	}
	for _, entry := range list {
		g, err := glob.Compile(strings.ToLower(entry))
		for _, n := range names {
			if (err == nil && g.Match(strings.ToLower(n))) || strings.EqualFold(entry, n) {
				return true
			}
		}
	}
	return false
}

// resources is what the selector's resources come to in a cairn
// registration, which names types as the API does (plural, lowercase,
// with their group unless core): "*" when the selector names none, or a
// name cairn would not match (a kind, a glob, a core-less "jobs"); the
// adapter applies each action's own selector anyway.
func (s selector) resources() []string {
	var out []string
	for _, r := range s.includedResources {
		if r != strings.ToLower(r) || strings.ContainsAny(r, "*?[{") || (!strings.Contains(r, ".") && !coreResources[r]) {
			return []string{"*"}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return []string{"*"}
	}
	return out
}

// coreResources are the types of the core group an action may name.
var coreResources = map[string]bool{
	"bindings": true, "configmaps": true, "endpoints": true, "events": true, "limitranges": true, "namespaces": true,
	"nodes": true, "persistentvolumeclaims": true, "persistentvolumes": true, "pods": true, "podtemplates": true,
	"replicationcontrollers": true, "resourcequotas": true, "secrets": true, "serviceaccounts": true, "services": true,
}
