package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestGCSLocation runs a gs:// location on fake-gcs-server: a backup
// whose volume data moves into the bucket's kopia repository completes,
// is listed from a fresh Temporal, survives full maintenance, verifies in
// full, restores byte-identical, and is deleted with everything it
// wrote; another expires.
func TestGCSLocation(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	ctx := context.Background()
	env := startFakeGCS(t)
	url := gcsBucket(t, "cairn-gcs")
	m.startMoverWorker(env...) // its data movers inherit STORAGE_EMULATOR_HOST

	makeClaims(t, m.stack, "gcs", "data")
	want := fillVolume(t, m.stack, "gcs", "data", datatree.Spec{LargeFiles: 2, LargeSize: 2 << 20, SmallFiles: 40, SmallSize: 4096, Seed: 29})
	req := moveRequest("gcs-1", "gcs")
	req.StorageLocation = url
	_, err := m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	v := m.waitDone("gcs-1", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)

	t.Run("listed from a fresh Temporal, by the location alone", func(t *testing.T) {
		catalog, err := location.ParseCatalog(m.location, []string{"gcs=" + url}, false)
		require.NoError(t, err)
		assertListedFromFreshTemporal(t, catalog, nil, "gcs-1")
		assertListedPastOnePage(t, m.stack, catalog, nil, url)
	})

	t.Run("expired with everything it wrote", func(t *testing.T) {
		assertExpiresFrom(t, m.stack, url, "gcs-expiring", "gcs")
	})

	t.Run("full maintenance of the bucket's repository", func(t *testing.T) {
		maintainFully(t, m.stack, url)
	})

	res, err := m.starter.VerifyBackup(ctx, "gcs-1", true)
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res)
	require.NotNil(t, res.VolumeData)
	assert.GreaterOrEqual(t, res.VolumeData.ReadBytes, int64(4<<20))

	deleteNamespace(t, m.cluster.Config(), "gcs")
	r := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "gcs-r1", BackupName: "gcs-1", StorageLocation: url}}, 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
	assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "gcs", "data"), 10))

	del, err := m.starter.DeleteBackup(ctx, "gcs-1", false)
	require.NoError(t, err)
	require.NoError(t, m.starter.WaitRun(ctx, del.WorkflowID, del.RunID))
	loc, err := location.OpenPlain(ctx, url)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(ctx, location.Backup("gcs-1").Prefix())
	require.NoError(t, err)
	assert.Empty(t, keys, "the backup's objects are gone from the bucket")
}
