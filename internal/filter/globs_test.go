package filter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlobsMatch(t *testing.T) {
	g, err := NewGlobs([]string{"app-*", "db"}, []string{"app-old*"})
	require.NoError(t, err)
	assert.True(t, g.Match("app-web"))
	assert.True(t, g.Match("db"))
	assert.False(t, g.Match("app-old1"), "exclude wins over include")
	assert.False(t, g.Match("other"))
	assert.False(t, g.IncludesEverything())

	all, err := NewGlobs(nil, nil)
	require.NoError(t, err)
	assert.True(t, all.Match("anything"))
	assert.True(t, all.IncludesEverything())

	star, err := NewGlobs([]string{"*"}, []string{"kube-*"})
	require.NoError(t, err)
	assert.True(t, star.Match("default"))
	assert.False(t, star.Match("kube-system"))
	assert.False(t, star.IncludesEverything())
}

func TestGlobsMatchAnyName(t *testing.T) {
	g, err := NewGlobs([]string{"deployments"}, nil)
	require.NoError(t, err)
	assert.True(t, g.Match("deployments.apps", "deployments"))
	assert.False(t, g.Match("configmaps"))
}

func TestMalformedGlob(t *testing.T) {
	_, err := NewGlobs([]string{"app-["}, nil)
	assert.ErrorContains(t, err, "malformed glob")
	_, err = NewGlobs(nil, []string{""})
	assert.ErrorContains(t, err, "empty pattern")
}

func TestLabels(t *testing.T) {
	l, err := NewLabels("tier=backend", []string{"app=a", "app=b"})
	require.NoError(t, err)
	assert.True(t, l.Match(map[string]string{"tier": "backend", "app": "b"}))
	assert.False(t, l.Match(map[string]string{"tier": "backend", "app": "c"}))
	assert.False(t, l.Match(map[string]string{"app": "a"}))
	assert.Equal(t, "tier=backend", l.Server)

	_, err = NewLabels("a in (", nil)
	assert.ErrorContains(t, err, "malformed label selector")
	_, err = NewLabels("", []string{"==x"})
	assert.ErrorContains(t, err, "orLabelSelectors")

	empty, err := NewLabels("", nil)
	require.NoError(t, err)
	assert.True(t, empty.Empty())
	assert.True(t, empty.Match(nil))
}
