package resourcemodifiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/gobwas/glob"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

type conditionsSpec struct {
	GroupResource     string                `json:"groupResource"`
	ResourceNameRegex string                `json:"resourceNameRegex,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	Matches           []matchSpec           `json:"matches,omitempty"`
}

type matchSpec struct {
	Path  string `json:"path"`
	Value string `json:"value,omitempty"`
}

// conditions decide whether a rule applies to an object. A nil or empty
// field puts no constraint.
type conditions struct {
	groupResource *glob.Pattern
	namespaces    []*glob.Pattern
	name          *regexp.Regexp
	labels        labels.Selector
	matches       []valueMatch
}

// valueMatch holds when the JSON value at pointer equals want.
type valueMatch struct {
	pointer []string // decoded reference tokens
	want    any      // decoded with encoding/json, like the object it is compared with
}

func compileConditions(spec conditionsSpec) (conditions, error) {
	if spec.GroupResource == "" {
		return conditions{}, errors.New("groupResource is required")
	}
	var c conditions
	var err error
	// Velero matches groupResource as a glob whose wildcards stop at dots:
	// "*" is any core resource, "*.apps" any resource of apps, "*.*" any
	// resource of a one-word group.
	if c.groupResource, err = glob.Compile(spec.GroupResource, '.'); err != nil {
		return conditions{}, fmt.Errorf("groupResource: %w", err)
	}
	for i, ns := range spec.Namespaces {
		g, err := glob.Compile(ns)
		if err != nil {
			return conditions{}, fmt.Errorf("namespaces[%d]: %w", i, err)
		}
		c.namespaces = append(c.namespaces, g)
	}
	if spec.ResourceNameRegex != "" {
		if c.name, err = regexp.Compile(spec.ResourceNameRegex); err != nil {
			return conditions{}, fmt.Errorf("resourceNameRegex: %w", err)
		}
	}
	if spec.LabelSelector != nil {
		if c.labels, err = metav1.LabelSelectorAsSelector(spec.LabelSelector); err != nil {
			return conditions{}, fmt.Errorf("labelSelector: %w", err)
		}
	}
	for i, m := range spec.Matches {
		vm, err := compileValueMatch(m)
		if err != nil {
			return conditions{}, fmt.Errorf("matches[%d]: %w", i, err)
		}
		c.matches = append(c.matches, vm)
	}
	return c, nil
}

func compileValueMatch(spec matchSpec) (valueMatch, error) {
	tokens, err := parsePointer(spec.Path)
	if err != nil {
		return valueMatch{}, fmt.Errorf("path: %w", err)
	}
	raw, err := veleroValueJSON(spec.Value)
	if err != nil {
		return valueMatch{}, fmt.Errorf("value: %w", err)
	}
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		return valueMatch{}, fmt.Errorf("value: %w", err)
	}
	return valueMatch{pointer: tokens, want: want}, nil
}

// target is the object the conditions look at: the object as it came to
// Apply, before any rule changed it, as Velero does. Its generic form is
// decoded once, and only if a rule has matches.
type target struct {
	obj           *unstructured.Unstructured
	groupResource string
	encoded       []byte // obj as JSON
	generic       any
	genericErr    error
	decoded       bool
}

func (t *target) genericDoc() (any, error) {
	if !t.decoded {
		t.decoded = true
		t.genericErr = json.Unmarshal(t.encoded, &t.generic)
	}
	return t.generic, t.genericErr
}

// hold reports whether every condition holds for t.
func (c *conditions) hold(t *target) (bool, error) {
	if !c.groupResource.Match(t.groupResource) {
		return false, nil
	}
	// Cluster-scoped objects pass the namespaces condition, as in Velero.
	if ns := t.obj.GetNamespace(); ns != "" && len(c.namespaces) > 0 && !matchesAny(c.namespaces, ns) {
		return false, nil
	}
	if c.name != nil && !c.name.MatchString(t.obj.GetName()) {
		return false, nil
	}
	if c.labels != nil && !c.labels.Matches(labels.Set(t.obj.GetLabels())) {
		return false, nil
	}
	if len(c.matches) == 0 {
		return true, nil
	}
	doc, err := t.genericDoc()
	if err != nil {
		return false, fmt.Errorf("decoding the object for matches: %w", err)
	}
	for _, m := range c.matches {
		got, found := lookupPointer(doc, m.pointer)
		if !found || !reflect.DeepEqual(got, m.want) {
			return false, nil
		}
	}
	return true, nil
}

func matchesAny(globs []*glob.Pattern, s string) bool {
	for _, g := range globs {
		if g.Match(s) {
			return true
		}
	}
	return false
}

// parsePointer splits a JSON pointer (RFC 6901) into decoded tokens. The
// whole document ("") is refused: no rule needs it and Velero requires a path.
func parsePointer(pointer string) ([]string, error) {
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must start with /", pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, tok := range tokens {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("%q is not a JSON pointer: ~ must be followed by 0 or 1", pointer)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// lookupPointer follows tokens through a document decoded by encoding/json
// and reports whether they lead to a value.
func lookupPointer(doc any, tokens []string) (any, bool) {
	for _, tok := range tokens {
		switch node := doc.(type) {
		case map[string]any:
			next, ok := node[tok]
			if !ok {
				return nil, false
			}
			doc = next
		case []any:
			// Negative indexes count from the end, as in the JSON Patch
			// libraries Velero and this package use.
			idx, err := strconv.Atoi(tok)
			if err != nil {
				return nil, false
			}
			if idx < 0 {
				idx += len(node)
			}
			if idx < 0 || idx >= len(node) {
				return nil, false
			}
			doc = node[idx]
		default:
			return nil, false
		}
	}
	return doc, true
}
