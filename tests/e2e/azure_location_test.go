package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestAzureLocation runs an azblob:// location on Azurite, addressed as a
// real account is (by host name), with the account and key from the
// environment: a backup of objects and of a volume whose data moves into
// the container's kopia repository completes with every object once, is
// listed from a fresh Temporal (and 1,005 backups past a page), survives
// full maintenance, verifies in full, restores byte-identical into
// mapped namespaces, and is deleted from the container with everything
// it wrote; another expires.
func TestAzureLocation(t *testing.T) {
	t.Parallel()
	env := azureEnv()
	m := newMoverStack(t)
	ctx := context.Background()
	url := startAzurite(t).container("cairn")
	want := seedConfigMaps(t, m.cluster.Config(), "az", seedNamespaces, 10)
	makeClaims(t, m.stack, "azv", "data")
	data := fillVolume(t, m.stack, "azv", "data", datatree.Spec{LargeFiles: 2, LargeSize: 2 << 20, SmallFiles: 40, SmallSize: 4096, Seed: 31})
	m.startMoverWorker(env...) // its data movers inherit the account, the key and the proxy

	req := moveRequest("az-1", "azv")
	req.IncludedNamespaces = append(req.IncludedNamespaces, "az-*")
	req.StorageLocation = url
	_, err := m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	v := m.waitDone("az-1", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	counts := tarballCountsAt(t, m.stack, url, "az-1")
	for key := range want {
		assert.Equal(t, 1, counts["configmaps"][key], "ConfigMap %s in the tarball", key)
	}
	assert.Equal(t, map[string]int{"azv/data": 1}, counts["persistentvolumeclaims"])
	require.Len(t, v.Status.Operations, 1)

	t.Run("listed from a fresh Temporal, by the location alone", func(t *testing.T) {
		catalog, err := location.ParseCatalog(m.location, []string{"azure=" + url}, false)
		require.NoError(t, err)
		assertListedFromFreshTemporal(t, catalog, nil, "az-1")
		assertListedPastOnePage(t, m.stack, catalog, nil, url)
	})

	t.Run("expired with everything it wrote", func(t *testing.T) {
		assertExpiresFrom(t, m.stack, url, "az-expiring", "az-00")
	})

	t.Run("full maintenance of the container's repository", func(t *testing.T) {
		maintainFully(t, m.stack, url)
	})

	res, err := m.starter.VerifyBackup(ctx, "az-1", true)
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res)
	require.NotNil(t, res.VolumeData)
	assert.GreaterOrEqual(t, res.VolumeData.ReadBytes, int64(4<<20))

	mapping := map[string]string{}
	for i := range seedNamespaces {
		mapping[fmt.Sprintf("az-%02d", i)] = fmt.Sprintf("az-r-%02d", i)
	}
	deleteNamespace(t, m.cluster.Config(), "azv")
	r := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "az-r1", BackupName: "az-1",
		StorageLocation: url, NamespaceMapping: mapping}}, 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
	assertRestoredSeed(t, m.stack, mapping, want)
	assert.Empty(t, datatree.Diff(data, digestVolume(t, m.stack, "azv", "data"), 10), "the volume is byte-identical")

	del, err := m.starter.DeleteBackup(ctx, "az-1", false)
	require.NoError(t, err)
	require.NoError(t, m.starter.WaitRun(ctx, del.WorkflowID, del.RunID))
	loc, err := location.OpenPlain(ctx, url)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(ctx, location.Backup("az-1").Prefix())
	require.NoError(t, err)
	assert.Empty(t, keys, "the backup's blobs are gone from the container")
	repo, err := loc.Keys(ctx, "kopia/")
	require.NoError(t, err)
	assert.NotEmpty(t, repo, "the volume data went through kopia's Azure storage into the container")
}
