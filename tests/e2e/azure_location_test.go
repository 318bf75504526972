package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

// TestAzureLocation runs an azblob:// location on Azurite, with the
// account and key from the environment: a backup completes with every
// object once, is listed from a fresh Temporal by the location alone,
// verifies, restores into mapped namespaces, and is deleted from the
// container; another expires. (Volume data cannot go to the emulator:
// kopia addresses accounts by host name.)
func TestAzureLocation(t *testing.T) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", azuriteAccount)
	t.Setenv("AZURE_STORAGE_KEY", azuriteKey)
	s := newStack(t)
	ctx := context.Background()
	url := startAzurite(t).container("cairn")
	want := seedConfigMaps(t, s.cluster.Config(), "az", seedNamespaces, 10)
	s.startWorker() // inherits the account and key

	_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: workflows.BackupSpec{
		Name: "az-1", IncludedNamespaces: []string{"az-*"}, StorageLocation: url}})
	require.NoError(t, err)
	v := s.waitDone("az-1", 2*time.Minute)
	require.Equal(t, workflows.PhaseCompleted, v.Phase, "%+v", v.Status)
	assertExactlySeededAt(t, s, url, "az-1", "az", want)

	t.Run("listed from a fresh Temporal, by the location alone", func(t *testing.T) {
		catalog, err := location.ParseCatalog(s.location, []string{"azure=" + url}, false)
		require.NoError(t, err)
		assertListedFromFreshTemporal(t, catalog, nil, "az-1")
	})

	t.Run("expired with everything it wrote", func(t *testing.T) {
		assertExpiresFrom(t, s, url, "az-expiring", "az-00")
	})

	t.Run("verified, restored, deleted", func(t *testing.T) {
		res, err := s.starter.VerifyBackup(ctx, "az-1", false)
		require.NoError(t, err)
		assert.True(t, res.OK(), "%+v", res)

		mapping := map[string]string{}
		for i := range seedNamespaces {
			mapping[fmt.Sprintf("az-%02d", i)] = fmt.Sprintf("az-r-%02d", i)
		}
		r := s.restore(starter.CreateRestoreRequest{RestoreSpec: workflows.RestoreSpec{Name: "az-r1", BackupName: "az-1",
			StorageLocation: url, NamespaceMapping: mapping}}, 2*time.Minute)
		require.Equal(t, workflows.PhaseCompleted, r.Phase, "%+v", r.Status)
		assertRestoredSeed(t, s, mapping, want)

		del, err := s.starter.DeleteBackup(ctx, "az-1", false)
		require.NoError(t, err)
		require.NoError(t, s.starter.WaitRun(ctx, del.WorkflowID, del.RunID))
		loc, err := location.OpenPlain(ctx, url)
		require.NoError(t, err)
		defer loc.Close()
		keys, err := loc.Keys(ctx, location.Backup("az-1").Prefix())
		require.NoError(t, err)
		assert.Empty(t, keys, "the backup's blobs are gone from the container")
	})
}
