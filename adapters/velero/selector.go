package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// selector is what a plugin action's AppliesTo selects, as Velero reads
// it: resources by name, name.group or kind (abbreviations such as "svc"
// need discovery, which the adapter does not do), namespaces, labels. An
// empty list selects all; an item without a namespace is selected only
// when the namespaces are not narrowed.
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

// listed reports whether one of names is in list ("*" is every name);
// an empty list answers empty.
func listed(list, names []string, empty bool) bool {
	if len(list) == 0 {
		return empty
	}
	for _, entry := range list {
		for _, n := range names {
			if entry == "*" || strings.EqualFold(entry, n) {
				return true
			}
		}
	}
	return false
}

// resources is what the selector's resources come to in a cairn
// registration: "*" when it names none.
func (s selector) resources() []string {
	if len(s.includedResources) == 0 || slices.Contains(s.includedResources, "*") {
		return []string{"*"}
	}
	return s.includedResources
}
