// Package filter holds the include/exclude rules of a backup spec: glob
// lists for namespaces and resources, and label selectors joined with OR.
package filter

import (
	"fmt"
	"path"
	"strings"
)

// Globs is an include/exclude pair of glob lists. An empty include list or
// one containing "*" includes everything; excludes win over includes.
type Globs struct {
	Include []string
	Exclude []string
}

// NewGlobs validates every pattern and returns the pair.
func NewGlobs(include, exclude []string) (Globs, error) {
	for _, p := range append(append([]string{}, include...), exclude...) {
		if err := ValidateGlob(p); err != nil {
			return Globs{}, err
		}
	}
	return Globs{Include: include, Exclude: exclude}, nil
}

// ValidateGlob reports a malformed pattern (path.Match syntax).
func ValidateGlob(p string) error {
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("empty pattern")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("malformed glob %q: %w", p, err)
	}
	return nil
}

// IsGlob reports whether p contains glob metacharacters.
func IsGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// IncludesEverything reports whether nothing is filtered out.
func (g Globs) IncludesEverything() bool { return g.includesAll() && len(g.Exclude) == 0 }

func (g Globs) includesAll() bool {
	if len(g.Include) == 0 {
		return true
	}
	for _, p := range g.Include {
		if p == "*" {
			return true
		}
	}
	return false
}

// Match reports whether any of names is included and none is excluded.
// Several names stand for one thing (for a resource: "deployments.apps" and
// "deployments"), so a user may write either.
func (g Globs) Match(names ...string) bool {
	if matchAny(g.Exclude, names) {
		return false
	}
	return g.includesAll() || matchAny(g.Include, names)
}

func matchAny(patterns, names []string) bool {
	for _, p := range patterns {
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}
