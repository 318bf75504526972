package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestS3LocationsWithTheirOwnCredentials: two real S3 servers (MinIO),
// each with root credentials of its own, are two named locations whose
// credentials come from a directory each (as a mounted Secret has them),
// while the worker's environment holds wrong ones. A backup whose volume
// data moves into the first is listed from a fresh Temporal, restores
// byte-identical, survives full repository maintenance, and is deleted
// with everything it wrote; another expires; a backup into the second
// writes only there.
func TestS3LocationsWithTheirOwnCredentials(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	ctx := context.Background()
	offsite := startMinIO(t, "offsite-admin", "offsite-secret-1")
	archive := startMinIO(t, "archive-admin", "archive-secret-2")
	offsiteURL, archiveURL := offsite.bucket("cairn-offsite"), archive.bucket("cairn-archive")
	specs := []string{"offsite=" + offsiteURL + ";credentials=" + offsite.credentialsDir(),
		"archive=" + archiveURL + ";credentials=" + archive.credentialsDir()}
	catalog, err := location.ParseCatalog(m.location, specs, false)
	require.NoError(t, err)
	m.locations = &location.Opener{CredentialDirs: catalog.CredentialDirs()}
	m.starter = starter.New(m.temporalC, starter.Options{DefaultLocation: m.location, Opener: m.locations})
	var extra []string
	for _, spec := range specs {
		extra = append(extra, "--location-name", spec)
	}
	// The environment's credentials are wrong for both servers: only a
	// location's own get in.
	m.startMoverWorkerArgs(repoPassword, extra, "AWS_ACCESS_KEY_ID=wrong", "AWS_SECRET_ACCESS_KEY=wrong-too")

	makeClaims(t, m.stack, "s3", "data")
	want := fillVolume(t, m.stack, "s3", "data", datatree.Spec{LargeFiles: 2, LargeSize: 2 << 20, SmallFiles: 40, SmallSize: 4096, Seed: 23})
	req := moveRequest("s3-1", "s3")
	req.StorageLocation = offsiteURL
	_, err = m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	v := m.waitDone("s3-1", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	written := offsite.keys("cairn-offsite", "")
	for _, key := range []string{"backups/s3-1/backup.json", "backups/s3-1/resources.tar.gz", "backups/s3-1/logs.jsonl.gz"} {
		assert.Contains(t, written, key)
	}
	assert.True(t, slices.ContainsFunc(written, func(k string) bool { return filepath.Dir(k) == "kopia" }), "the volume data is in the bucket's repository: %v", written)
	assert.Empty(t, archive.keys("cairn-archive", ""), "nothing went to the other server")

	t.Run("listed from a fresh Temporal, by the location alone", func(t *testing.T) {
		assertListedFromFreshTemporal(t, catalog, m.locations, "s3-1")
	})

	t.Run("expired with everything it wrote", func(t *testing.T) {
		assertExpiresFrom(t, m.stack, offsiteURL, "s3-expiring", "s3")
	})

	t.Run("restored byte-identical", func(t *testing.T) {
		deleteNamespace(t, m.cluster.Config(), "s3")
		r := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "s3-r1", BackupName: "s3-1", StorageLocation: offsiteURL}}, 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "s3", "data"), 10))
	})

	t.Run("verified whole, volume data read back in full", func(t *testing.T) {
		res, err := m.starter.VerifyBackup(ctx, "s3-1", true)
		require.NoError(t, err)
		assert.True(t, res.OK(), "%+v", res)
		require.NotNil(t, res.VolumeData)
		assert.Equal(t, 1, res.VolumeData.Snapshots)
		assert.Positive(t, res.VolumeData.ReadFiles)
		assert.GreaterOrEqual(t, res.VolumeData.ReadBytes, int64(4<<20), "both large files read back")
	})

	t.Run("full maintenance of the bucket's repository, then deletion of everything the backup wrote", func(t *testing.T) {
		maintainFully(t, m.stack, offsiteURL)

		res, err := m.starter.DeleteBackup(ctx, "s3-1", false)
		require.NoError(t, err)
		require.NoError(t, m.starter.WaitRun(ctx, res.WorkflowID, res.RunID))
		assert.Empty(t, offsite.keys("cairn-offsite", "backups/s3-1/"), "the backup's objects are gone from the bucket")
	})

	t.Run("listed past the store's 1,000-key page", func(t *testing.T) {
		assertListedPastOnePage(t, m.stack, catalog, m.locations, archiveURL)
	})

	t.Run("the other location, with the other credentials", func(t *testing.T) {
		m.backup(v1alpha1.BackupSpec{Name: "s3-archive", IncludedNamespaces: []string{"s3"}, IncludedResources: []string{"configmaps"},
			StorageLocation: archiveURL})
		assert.Contains(t, archive.keys("cairn-archive", "backups/"), "backups/s3-archive/backup.json")
		assert.Empty(t, offsite.keys("cairn-offsite", "backups/s3-archive/"))
	})
}
