package filter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// Labels selects objects whose labels match the selector AND, when OR
// selectors are given, at least one of them.
type Labels struct {
	selector labels.Selector
	or       []labels.Selector
	// Server is the one selector that can be handed to the API server;
	// empty when the OR list forces filtering on the client.
	Server string
}

// NewLabels parses a selector and a list of OR selectors.
func NewLabels(selector string, orSelectors []string) (Labels, error) {
	l := Labels{selector: labels.Everything()}
	if selector != "" {
		s, err := labels.Parse(selector)
		if err != nil {
			return Labels{}, fmt.Errorf("malformed label selector %q: %w", selector, err)
		}
		l.selector = s
		l.Server = selector
	}
	for _, o := range orSelectors {
		s, err := labels.Parse(o)
		if err != nil {
			return Labels{}, fmt.Errorf("malformed label selector %q in orLabelSelectors: %w", o, err)
		}
		l.or = append(l.or, s)
	}
	return l, nil
}

// Empty reports whether every object matches.
func (l Labels) Empty() bool { return l.selector.Empty() && len(l.or) == 0 }

// Match reports whether an object with these labels is selected.
func (l Labels) Match(set map[string]string) bool {
	ls := labels.Set(set)
	if !l.selector.Matches(ls) {
		return false
	}
	if len(l.or) == 0 {
		return true
	}
	for _, s := range l.or {
		if s.Matches(ls) {
			return true
		}
	}
	return false
}
