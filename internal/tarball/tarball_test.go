package tarball

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripVeleroLayout(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "app", "settings", []byte(`{"kind":"ConfigMap"}`)))
	require.NoError(t, w.Add("deployments.apps", "v1", "app", "web", []byte(`{"kind":"Deployment"}`)))
	require.NoError(t, w.Add("persistentvolumes", "v1", "", "pv-1", []byte(`{"kind":"PersistentVolume"}`)))
	assert.ErrorContains(t, w.Add("configmaps", "v1", "app", "", nil), "without a name")
	require.NoError(t, w.Close())
	assert.Equal(t, 3, w.Items)

	var paths []string
	var versions []string
	format, err := Walk(bytes.NewReader(buf.Bytes()), func(e Entry) error {
		paths = append(paths, e.Path)
		versions = append(versions, e.Version)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", format)
	assert.Equal(t, []string{
		"resources/configmaps/namespaces/app/settings.json",
		"resources/configmaps/v1-preferredversion/namespaces/app/settings.json",
		"resources/deployments.apps/namespaces/app/web.json",
		"resources/deployments.apps/v1-preferredversion/namespaces/app/web.json",
		"resources/persistentvolumes/cluster/pv-1.json",
		"resources/persistentvolumes/v1-preferredversion/cluster/pv-1.json",
	}, paths)
	assert.Equal(t, []string{"", "v1", "", "v1", "", "v1"}, versions)
}

func TestWalkCorrupt(t *testing.T) {
	_, err := Walk(bytes.NewReader([]byte("not gzip")), func(Entry) error { return nil })
	assert.ErrorContains(t, err, "not a gzip stream")

	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "a", "b", bytes.Repeat([]byte("x"), 4096)))
	require.NoError(t, w.Close())
	truncated := buf.Bytes()[:buf.Len()/2]
	_, err = Walk(bytes.NewReader(truncated), func(Entry) error { return nil })
	assert.Error(t, err)
}
