package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// fixture is a file location in a temporary directory and an activity
// environment with the store activities registered.
type fixture struct {
	dir  string
	url  string
	loc  *location.Location
	env  *testsuite.TestActivityEnvironment
	acts *Activities
}

func newFixture(t *testing.T, acts *Activities) *fixture {
	t.Helper()
	if acts == nil {
		acts = &Activities{Log: zap.NewNop()}
	}
	dir := t.TempDir()
	url := "file://" + dir
	loc, err := location.OpenPlain(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &fixture{dir: dir, url: url, loc: loc, env: env, acts: acts}
}

func (f *fixture) write(t *testing.T, key, data string) {
	t.Helper()
	require.NoError(t, f.loc.WriteAll(context.Background(), key, []byte(data)))
}

func (f *fixture) writeJSON(t *testing.T, key string, v any) {
	t.Helper()
	require.NoError(t, f.loc.WriteJSON(context.Background(), key, v))
}

func (f *fixture) readJSON(t *testing.T, key string, v any) {
	t.Helper()
	require.NoError(t, f.loc.ReadJSON(context.Background(), key, v))
}

func (f *fixture) exists(t *testing.T, key string) bool {
	t.Helper()
	ok, err := f.loc.Exists(context.Background(), key)
	require.NoError(t, err)
	return ok
}

func (f *fixture) keys(t *testing.T, prefix string) []string {
	t.Helper()
	keys, err := f.loc.Keys(context.Background(), prefix)
	require.NoError(t, err)
	return keys
}

// tarballObjects are the objects of b1's tarball by path.
func (f *fixture) tarballObjects(t *testing.T) map[string]string {
	t.Helper()
	r, err := f.loc.NewReader(context.Background(), b1.Resources())
	require.NoError(t, err)
	defer r.Close()
	got := map[string]string{}
	format, err := tarball.Walk(r, tarball.Limits{}, func(e tarball.Entry) error {
		got[e.Path] = string(e.Data)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, tarball.FormatVersion, format)
	return got
}

// blockKey makes writing key fail: a non-empty directory sits where the
// object would be renamed into place (which fails even for root).
func (f *fixture) blockKey(t *testing.T, key string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(f.dir, filepath.FromSlash(key)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, filepath.FromSlash(key), "x"), nil, 0o644))
}

// unblockKey lets key be written again.
func (f *fixture) unblockKey(t *testing.T, key string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(filepath.Join(f.dir, filepath.FromSlash(key))))
}

// logMessages returns the "msg" of every line of a gzipped JSON-lines log.
func (f *fixture) logMessages(t *testing.T, key string) []string {
	t.Helper()
	data, err := f.loc.ReadAll(context.Background(), key)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(plain)), "\n") {
		var m struct {
			Msg string `json:"msg"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		msgs = append(msgs, m.Msg)
	}
	return msgs
}

// counter is the value of the counter name with labels in cairn's
// registry (0 when it has not been counted yet).
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if hasLabels(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	if len(m.GetLabel()) != len(want) {
		return false
	}
	for _, l := range m.GetLabel() {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}
