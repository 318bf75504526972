package tarball

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// objectsTarball holds n ConfigMaps, each twice (plain and preferred).
func objectsTarball(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	for i := range n {
		name := fmt.Sprintf("cm-%05d", i)
		require.NoError(t, w.Add("configmaps", "v1", "app", name, []byte(`{"name":"`+name+`"}`)))
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func preferredOnly(e Entry) bool { return e.Preferred }

// slowly prepares an entry with more work for some than for others, so
// the workers finish out of order.
func slowly(e Entry) (string, error) {
	for range len(e.Name) % 7 * 50 {
		runtime.Gosched()
	}
	return strings.ToUpper(string(e.Data)), nil
}

func TestWalkPreparedUsesEveryEntryInOrder(t *testing.T) {
	data := objectsTarball(t, 1000)
	var want []string
	_, err := WalkWanted(bytes.NewReader(data), Limits{}, preferredOnly, func(e Entry) error {
		want = append(want, e.Name+" "+strings.ToUpper(string(e.Data)))
		return nil
	})
	require.NoError(t, err)
	require.Len(t, want, 1000)

	for _, workers := range []int{1, 4} {
		var got []string
		format, err := WalkPrepared(bytes.NewReader(data), Limits{}, preferredOnly, workers, slowly, func(e Entry, upper string) error {
			got = append(got, e.Name+" "+upper)
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, FormatVersion, format)
		assert.Equal(t, want, got, "%d workers", workers)
	}
}

func TestWalkPreparedStopsAtTheFirstError(t *testing.T) {
	data := objectsTarball(t, 2000)
	boom := errors.New("boom")
	prepareFails := func(e Entry) (string, error) {
		if e.Name == "cm-00700" {
			return "", boom
		}
		return slowly(e)
	}
	var used []string
	_, err := WalkPrepared(bytes.NewReader(data), Limits{}, preferredOnly, 3, prepareFails, func(e Entry, _ string) error {
		used = append(used, e.Name)
		return nil
	})
	assert.Equal(t, boom, err, "prepare's error comes back as is")
	require.Len(t, used, 700, "the entries before the one that failed are used, none after")
	assert.Equal(t, "cm-00699", used[len(used)-1])

	used = nil
	_, err = WalkPrepared(bytes.NewReader(data), Limits{}, preferredOnly, 3, slowly, func(e Entry, _ string) error {
		used = append(used, e.Name)
		if len(used) == 5 {
			return boom
		}
		return nil
	})
	assert.Equal(t, boom, err, "use's error comes back as is")
	assert.Len(t, used, 5, "nothing is used after use failed")

	var n int
	_, err = WalkPrepared(bytes.NewReader(data[:len(data)/2]), Limits{}, preferredOnly, 3, slowly, func(Entry, string) error {
		n++
		return nil
	})
	assert.ErrorIs(t, err, ErrCorrupt, "a stream cut short is corrupt")
	assert.Positive(t, n, "what came before the cut was used")
}
