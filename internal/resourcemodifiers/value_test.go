package resourcemodifiers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVeleroValueJSON(t *testing.T) {
	cases := map[string]string{
		``:                  `""`,
		`3`:                 `3`,
		`-1.5e3`:            `-1.5e3`,
		`"3"`:               `"3"`,
		`"true"`:            `"true"`,
		`"a\"b"`:            `"a\"b"`,
		`true`:              `true`,
		`False`:             `false`,
		`null`:              `null`,
		`premium`:           `"premium"`,
		`nginx:1.19`:        `"nginx:1.19"`,
		`say "hi"`:          `"say \"hi\""`,
		`{"a": [1, 2]}`:     `{"a":[1,2]}`,
		`[ "x" ]`:           `["x"]`,
		`1e500`:             `"1e500"`, // not a float64, so Velero quotes it
		`"unterminated \"`:  `"unterminated \\"`,
		`0x1F`:              `"0x1F"`,
		`"" padded quotes"`: `"\" padded quotes"`,
	}
	for in, want := range cases {
		got, err := veleroValueJSON(in)
		require.NoError(t, err, in)
		assert.JSONEq(t, want, string(got), in)
	}

	for _, bad := range []string{`{"a": `, `[1,`, `007`, `NaN`, `+1`, `.5`} {
		_, err := veleroValueJSON(bad)
		assert.Error(t, err, bad)
	}
}
