package e2e

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestImmutableLocation: a location declared immutable, on a MinIO bucket
// with Object Lock. A bucket without the lock is refused when the worker
// starts. A backup with moved data writes every object of the backup and
// every blob of its volume data locked; cairn refuses to delete it, and
// so does the store when asked for a locked version directly; full
// maintenance extends the lock of the data in use; the backup still
// restores byte-identical. A TTL or a schedule's retention shorter than
// the lock is refused before anything starts.
func TestImmutableLocation(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	ctx := context.Background()
	vault := startMinIO(t, "vault-admin", "vault-secret-1")
	lockedURL, plainURL := vault.lockedBucket("cairn-vault"), vault.bucket("cairn-plain")
	creds := vault.credentialsDir()
	spec := "vault=" + lockedURL + ";credentials=" + creds + ";immutable=2d;lock-mode=governance"
	catalog, err := location.ParseCatalog(m.location, []string{spec}, false)
	require.NoError(t, err)

	t.Run("a bucket without Object Lock is refused at start", func(t *testing.T) {
		_, stderr, code := runCLI(t, "worker", "--temporal-address", m.temporalAddr, "--kubeconfig", m.cluster.KubeconfigPath(),
			"--location", m.location, "--data-dir", t.TempDir(), "--datamover-exposer", "process",
			"--csi-state-dir", m.cluster.CSIStateDir(), "--datamover-state-dir", t.TempDir(),
			"--location-name", "plain="+plainURL+";credentials="+creds+";immutable=2d")
		assert.NotZero(t, code)
		assert.Contains(t, stderr, "Object Lock is not enabled on its bucket cairn-plain")
	})

	m.locations = &location.Opener{CredentialDirs: catalog.CredentialDirs(), Locks: catalog.Locks()}
	m.starter = starter.New(m.temporalC, starter.Options{DefaultLocation: m.location, Opener: m.locations})
	m.startMoverWorkerArgs(repoPassword, []string{"--location-name", spec})

	t.Run("a ttl shorter than the lock is refused", func(t *testing.T) {
		req := moveRequest("vault-short", "vault")
		req.StorageLocation, req.TTL = lockedURL, &metav1.Duration{Duration: 24 * time.Hour}
		_, err := m.starter.CreateBackup(ctx, req)
		var invalid *starter.InvalidError
		require.ErrorAs(t, err, &invalid)
		assert.Contains(t, invalid.Error(), "ttl 24h0m0s is shorter than the object lock")
	})

	t.Run("a schedule keeping less than the lock is refused", func(t *testing.T) {
		keep := 3
		_, err := m.starter.CreateSchedule(ctx, v1alpha1.ScheduleSpec{Name: "vault-hourly", Every: &metav1.Duration{Duration: time.Hour},
			Template:  v1alpha1.BackupSpec{StorageLocation: lockedURL, TTL: &metav1.Duration{Duration: 72 * time.Hour}},
			Retention: v1alpha1.RetentionPolicy{KeepLast: &keep}})
		var invalid *starter.InvalidError
		require.ErrorAs(t, err, &invalid)
		assert.Contains(t, invalid.Error(), "retention.keepLast 3 keeps 3h0m0s of runs every 1h0m0s, less than the object lock")
	})

	makeClaims(t, m.stack, "vault", "data")
	want := fillVolume(t, m.stack, "vault", "data", datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 30, SmallSize: 4096, Seed: 31})
	req := moveRequest("vault-1", "vault")
	req.StorageLocation, req.TTL = lockedURL, &metav1.Duration{Duration: 72 * time.Hour}
	_, err = m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	require.NoError(t, m.temporalC.GetWorkflow(ctx, v1alpha1.BackupWorkflowID("vault-1"), "").Get(ctx, nil), "the backup ran to its end")
	v, err := m.starter.GetBackup(ctx, "vault-1")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	s3c := vault.client()
	backupKeys := vault.keys("cairn-vault", "backups/vault-1/")

	t.Run("every object of the backup and every data blob is locked", func(t *testing.T) {
		meta, err := vault.client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cairn-vault"), Key: aws.String("backups/vault-1/backup.json")})
		require.NoError(t, err)
		data, _ := io.ReadAll(meta.Body)
		meta.Body.Close()
		assert.Contains(t, string(data), `"immutableUntil"`)
		require.NotNil(t, v.ImmutableUntil, "%+v", v)
		assert.WithinDuration(t, time.Now().Add(48*time.Hour), *v.ImmutableUntil, 10*time.Minute)
		for _, key := range []string{"backup.json", "manifest.json", "resources.tar.gz", "results.json", "logs.jsonl.gz", "volumes.json"} {
			assert.Contains(t, backupKeys, "backups/vault-1/"+key)
		}
		for _, key := range backupKeys {
			assert.NotContains(t, key, "/.work/", "the backup's work objects are cleaned up")
			mode, until := retention(t, s3c, key)
			assert.Equal(t, "GOVERNANCE", mode, key)
			assert.WithinDuration(t, time.Now().Add(48*time.Hour), until, 10*time.Minute, key)
		}
		blobs := dataBlobs(vault.keys("cairn-vault", "kopia/"))
		require.NotEmpty(t, blobs, "the volume data is in the bucket's repository")
		for _, key := range blobs {
			mode, _ := retention(t, s3c, key)
			assert.Equal(t, "GOVERNANCE", mode, key)
		}
	})

	t.Run("cairn refuses to delete it, and it stays", func(t *testing.T) {
		_, stderr, code := runCLI(t, "backup", "delete", "vault-1", "--temporal-address", m.temporalAddr, "--location", m.location,
			"--location-name", spec)
		assert.Equal(t, starter.ExitConflict, code, stderr)
		assert.Contains(t, stderr, "backup vault-1 is immutable until")

		// As expiry or retention would: the deletion workflow itself.
		run, err := m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "vault-delete", TaskQueue: v1alpha1.TaskQueue},
			v1alpha1.DeleteBackupWorkflowName, v1alpha1.DeleteBackupRequest{Backup: "vault-1", Location: lockedURL, Reason: "test"})
		require.NoError(t, err)
		err = run.Get(ctx, nil)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.Equal(t, v1alpha1.ErrTypeImmutable, appErr.Type())
		assert.Equal(t, backupKeys, vault.keys("cairn-vault", "backups/vault-1/"), "nothing of the backup was deleted")
		got, err := m.starter.GetBackup(ctx, "vault-1")
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.PhaseCompleted, got.Phase)
	})

	t.Run("the store refuses to delete a locked version", func(t *testing.T) {
		for _, key := range []string{"backups/vault-1/resources.tar.gz", dataBlobs(vault.keys("cairn-vault", "kopia/"))[0]} {
			versions, err := s3c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("cairn-vault"), Prefix: aws.String(key)})
			require.NoError(t, err)
			require.NotEmpty(t, versions.Versions, key)
			_, err = s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cairn-vault"), Key: aws.String(key), VersionId: versions.Versions[0].VersionId})
			require.Error(t, err, "deleting a locked version of %s", key)
			assert.Contains(t, err.Error(), "WORM protected", key)
		}
	})

	t.Run("a deletion leaves no versions behind", func(t *testing.T) {
		// What a running backup writes is not locked; deleting it in a
		// versioned bucket leaves versions and delete markers, which the
		// deletion then purges.
		loc, err := m.locations.Open(ctx, lockedURL)
		require.NoError(t, err)
		defer loc.Close()
		work := location.Backup("vault-scratch").Work()
		for _, data := range []string{"one", "two"} {
			require.NoError(t, loc.WriteAll(ctx, work+"plan.json", []byte(data)))
		}
		require.NoError(t, loc.WriteAll(ctx, work+"parts/a.jsonl", []byte("a")))
		require.NoError(t, loc.DeletePrefix(ctx, "backups/vault-scratch/", nil))
		assert.Len(t, versions(t, s3c, "backups/vault-scratch/"), 5, "3 versions and 2 delete markers")
		purged, err := loc.PurgeVersions(ctx, "backups/vault-scratch/")
		require.NoError(t, err)
		assert.Equal(t, 5, purged)
		assert.Empty(t, versions(t, s3c, "backups/vault-scratch/"))
	})

	t.Run("full maintenance extends the lock of the data in use, and the backup restores byte-identical", func(t *testing.T) {
		blob := dataBlobs(vault.keys("cairn-vault", "kopia/"))[0]
		_, before := retention(t, s3c, blob)
		run, err := m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "vault-maintenance", TaskQueue: v1alpha1.TaskQueue},
			v1alpha1.RepositoryMaintenanceWorkflowName, v1alpha1.MaintenanceRequest{Location: lockedURL, Mode: "full"})
		require.NoError(t, err)
		var maint v1alpha1.MaintenanceResult
		require.NoError(t, run.Get(ctx, &maint))
		assert.True(t, maint.Ran)
		_, after := retention(t, s3c, blob)
		assert.True(t, after.After(before), "the lock of %s was extended: %s, then %s", blob, before, after)

		deleteNamespace(t, m.cluster.Config(), "vault")
		r := m.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "vault-r1", BackupName: "vault-1", StorageLocation: lockedURL}}, 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, m.stack, "vault", "data"), 10))
	})
}

// retention reads the Object Lock mode and retain-until date of key's
// current version.
func retention(t *testing.T, c *s3.Client, key string) (string, time.Time) {
	t.Helper()
	head, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("cairn-vault"), Key: aws.String(key)})
	require.NoError(t, err, key)
	if head.ObjectLockRetainUntilDate == nil {
		return string(head.ObjectLockMode), time.Time{}
	}
	return string(head.ObjectLockMode), *head.ObjectLockRetainUntilDate
}

// versions lists every version and delete marker under prefix.
func versions(t *testing.T, c *s3.Client, prefix string) []string {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String("cairn-vault"), Prefix: aws.String(prefix)})
	require.NoError(t, err)
	var ids []string
	for _, v := range out.Versions {
		ids = append(ids, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId))
	}
	for _, d := range out.DeleteMarkers {
		ids = append(ids, aws.ToString(d.Key)+"@"+aws.ToString(d.VersionId)+" (delete marker)")
	}
	return ids
}

// dataBlobs are the pack blobs of a kopia repository (p: file data, q:
// metadata), which hold the volume data.
func dataBlobs(keys []string) []string {
	var out []string
	for _, k := range keys {
		if name := filepath.Base(k); strings.HasPrefix(name, "p") || strings.HasPrefix(name, "q") {
			out = append(out, k)
		}
	}
	return out
}
