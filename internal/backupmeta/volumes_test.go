package backupmeta

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/sealing"
)

// A restore takes snapshot IDs from volumes.json only when it is what the
// manifest says the backup stored.
func TestCheckedVolumes(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testCheckedVolumes(t, &location.Opener{}) })
	t.Run("encrypted", func(t *testing.T) {
		file, err := sealing.Generate()
		require.NoError(t, err)
		k, err := sealing.ParseKeyring(file)
		require.NoError(t, err)
		testCheckedVolumes(t, &location.Opener{Keyring: k})
	})
}

func testCheckedVolumes(t *testing.T, opener *location.Opener) {
	ctx := context.Background()
	loc, err := opener.Open(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	b := location.Backup("b")
	vols := v1alpha1.VolumesFile{Volumes: []v1alpha1.VolumeRecord{{Volume: v1alpha1.Volume{Namespace: "ns", Claim: "data"},
		Upload: &v1alpha1.DataUploadInfo{SnapshotID: "k1234"}}}}
	require.NoError(t, loc.WriteJSON(ctx, b.Volumes(), vols))
	sum, err := loc.WriteManifest(ctx, b, b.Stored(), nil)
	require.NoError(t, err)
	m, err := loc.ReadManifest(ctx, b, sum)
	require.NoError(t, err)

	got, err := CheckedVolumes(ctx, loc, "b", m)
	require.NoError(t, err)
	assert.Equal(t, vols.Volumes, got)

	tampered := vols
	tampered.Volumes = []v1alpha1.VolumeRecord{{Volume: vols.Volumes[0].Volume, Upload: &v1alpha1.DataUploadInfo{SnapshotID: "k9999"}}}
	require.NoError(t, loc.WriteJSON(ctx, b.Volumes(), tampered))
	_, err = CheckedVolumes(ctx, loc, "b", m)
	assert.ErrorIs(t, err, location.ErrChecksum, "another snapshot ID")
	got, err = CheckedVolumes(ctx, loc, "b", nil)
	require.NoError(t, err, "without a manifest there is nothing to check against")
	assert.Equal(t, "k9999", got[0].Upload.SnapshotID)

	// A backup that stored no volumes.json: one added later is refused,
	// none at all is no volumes.
	empty := &location.Manifest{Algorithm: "sha256", Objects: map[string]location.Digest{}}
	_, err = CheckedVolumes(ctx, loc, "b", empty)
	assert.ErrorIs(t, err, location.ErrChecksum, "a volumes.json the manifest does not list")
	got, err = CheckedVolumes(ctx, loc, "other", empty)
	require.NoError(t, err)
	assert.Empty(t, got)
}
