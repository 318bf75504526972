package resourcemodifiers

import (
	"testing"

	"github.com/gobwas/glob"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileGlob(t *testing.T) {
	cases := []struct {
		pattern   string
		separator rune
		matches   []string
		misses    []string
	}{
		{"web-*", 0, []string{"web-", "web-eu.1"}, []string{"api-web"}},
		{"*", 0, []string{"", "a.b.c"}, nil},
		{"?s", '.', []string{"ns"}, []string{".s", "s"}},
		{"[abc]d", '.', []string{"ad", "cd"}, []string{"dd"}},
		{"[!abc]d", '.', []string{"xd", ".d"}, []string{"ad"}},
		{"[a-c]d", 0, []string{"bd"}, []string{"dd"}},
		{"a{b,c{d,e}}", 0, []string{"ab", "acd", "ace"}, []string{"ac", "a"}},
		{`a\*`, 0, []string{"a*"}, []string{"ab"}},
		{"x.(y)+", 0, []string{"x.(y)+"}, []string{"x.yy"}},
		{"a,b}", 0, []string{"a,b}"}, nil},
	}
	for _, tc := range cases {
		var seps []rune
		if tc.separator != 0 {
			seps = []rune{tc.separator}
		}
		re, err := glob.Compile(tc.pattern, seps...)
		require.NoError(t, err, tc.pattern)
		for _, s := range tc.matches {
			assert.True(t, re.Match(s), "%q should match %q", tc.pattern, s)
		}
		for _, s := range tc.misses {
			assert.False(t, re.Match(s), "%q should not match %q", tc.pattern, s)
		}
	}

	for _, bad := range []string{"[abc", "{a,b", "[]", "[z-a]", "[a-"} {
		_, err := glob.Compile(bad, '.')
		assert.Error(t, err, bad)
	}
}
