package repository

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kopia/kopia/repo/maintenance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/location"
)

// TestDeleteVolumeDataDeletesOnlyTheBackupsSnapshots: every snapshot the
// backup moved its volumes into goes; another backup's stay; the attempt
// logs with the backup.
func TestDeleteVolumeDataDeletesOnlyTheBackupsSnapshots(t *testing.T) {
	f := newFixture(t)
	data := f.upload(t, "b1", "data", 1)
	logs := f.upload(t, "b1", "logs", 2)
	f.upload(t, "b2", "data", 3)
	f.recordVolumes(t, "b1", map[string]string{"data": data, "logs": logs}, "data", "logs", "cache")

	res, err := deleteVolumeData(f.env, f.acts, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Snapshots)
	assert.Empty(t, f.snapshotsOf(t, "b1"))
	assert.Len(t, f.snapshotsOf(t, "b2"), 1, "another backup's volume data stays")
	keys, err := f.loc.Keys(context.Background(), location.Backup("b1").LogsPrefix())
	require.NoError(t, err)
	assert.NotEmpty(t, keys, "the attempt's log is kept with the backup")
}

// TestDeleteVolumeDataAgainIsSuccess: deleting the volume data of a
// backup whose snapshots are already gone (a retry) succeeds and deletes
// nothing.
func TestDeleteVolumeDataAgainIsSuccess(t *testing.T) {
	f := newFixture(t)
	f.recordVolumes(t, "b1", map[string]string{"data": f.upload(t, "b1", "data", 1)}, "data")
	keep := f.upload(t, "b2", "data", 2)
	in := v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url}
	_, err := deleteVolumeData(f.env, f.acts, in)
	require.NoError(t, err)

	res, err := deleteVolumeData(f.env, f.acts, in)
	require.NoError(t, err)
	assert.Zero(t, res.Snapshots)
	other := f.worker(t, "worker-b", password)
	res, err = deleteVolumeData(f.newEnv(other), other, in)
	require.NoError(t, err, "another worker's retry too")
	assert.Zero(t, res.Snapshots)
	snaps := f.snapshotsOf(t, "b2")
	require.Len(t, snaps, 1)
	assert.Equal(t, keep, snaps[0].ID)
}

// TestDeleteVolumeDataOfABackupThatMovedNoDataOpensNothing: a backup
// whose volumes.json records no upload (or that has none) never opens the
// repository: not even a wrong password fails it, and a location without
// a repository gets none.
func TestDeleteVolumeDataOfABackupThatMovedNoDataOpensNothing(t *testing.T) {
	f := newFixture(t)
	f.recordVolumes(t, "b1", nil, "data", "logs")
	wrong := f.worker(t, "worker-a", "not the password")
	env := f.newEnv(wrong)

	res, err := deleteVolumeData(env, wrong, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	require.NoError(t, err)
	assert.Zero(t, res.Snapshots)
	res, err = deleteVolumeData(env, wrong, v1alpha1.DeleteVolumeDataInput{Backup: "never-recorded", Location: f.url})
	require.NoError(t, err)
	assert.Zero(t, res.Snapshots)
	assert.NoDirExists(t, filepath.Join(f.dir, "kopia"), "no repository storage was opened")
	f.requireNoRepository(t)
}

// TestDeleteVolumeDataWithoutARepositoryIsSuccess: a location whose
// repository is gone (or never was) has no volume data to delete, and
// none is created.
func TestDeleteVolumeDataWithoutARepositoryIsSuccess(t *testing.T) {
	f := newFixture(t)
	f.recordVolumes(t, "b1", map[string]string{"data": "k0123456789abcdef"}, "data")
	res, err := deleteVolumeData(f.env, f.acts, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	require.NoError(t, err)
	assert.Zero(t, res.Snapshots)
	f.requireNoRepository(t)
}

// TestDeleteVolumeDataWithAWrongPasswordIsNonRetryable: a password that
// does not open the repository fails at once as RepositoryPassword,
// without the password in the message, and deletes nothing.
func TestDeleteVolumeDataWithAWrongPasswordIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	f.recordVolumes(t, "b1", map[string]string{"data": f.upload(t, "b1", "data", 1)}, "data")
	wrong := f.worker(t, "worker-a", "not the password")

	_, err := deleteVolumeData(f.newEnv(wrong), wrong, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeRepositoryPassword)
	assert.NotContains(t, err.Error(), "not the password")
	assert.Len(t, f.snapshotsOf(t, "b1"), 1)
}

// TestDeleteVolumeDataWithoutAPasswordIsNonRetryable: no configured
// password fails at once as RepositoryPassword.
func TestDeleteVolumeDataWithoutAPasswordIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	f.recordVolumes(t, "b1", map[string]string{"data": f.upload(t, "b1", "data", 1)}, "data")
	none := f.worker(t, "worker-a", "")

	_, err := deleteVolumeData(f.newEnv(none), none, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeRepositoryPassword)
	assert.Len(t, f.snapshotsOf(t, "b1"), 1)
}

// TestDeleteVolumeDataWithABadLocationIsNonRetryable: a location that
// cannot be opened fails at once as LocationUnavailable.
func TestDeleteVolumeDataWithABadLocationIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	_, err := deleteVolumeData(f.env, f.acts, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: "ftp://host/x"})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
}

// TestDeleteVolumeDataOfAnUnreadableVolumesFileIsRetryable: volumes.json
// that cannot be read fails the deletion, to be retried, rather than
// passing for a backup that moved nothing.
func TestDeleteVolumeDataOfAnUnreadableVolumesFileIsRetryable(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.loc.WriteAll(context.Background(), location.Backup("b1").Volumes(), []byte("{not json")))
	_, err := deleteVolumeData(f.env, f.acts, v1alpha1.DeleteVolumeDataInput{Backup: "b1", Location: f.url})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b1")
}

// TestMaintainRepositoryWithoutARepositoryLeavesTheLocationAlone: no
// repository yet: nothing runs and none is created.
func TestMaintainRepositoryWithoutARepositoryLeavesTheLocationAlone(t *testing.T) {
	f := newFixture(t)
	res, err := maintain(f.env, f.acts, v1alpha1.MaintenanceRequest{Location: f.url, Mode: "full"})
	require.NoError(t, err)
	assert.False(t, res.Ran)
	assert.Equal(t, "full", res.Mode)
	f.requireNoRepository(t)
}

// TestMaintainRepositoryRunsUnderCairnsOneMaintenanceIdentity: whichever
// worker runs it, maintenance owns the repository as cairn's maintenance
// client, not as the worker, so the next worker may run it too.
func TestMaintainRepositoryRunsUnderCairnsOneMaintenanceIdentity(t *testing.T) {
	f := newFixture(t)
	f.upload(t, "b1", "data", 1)
	res, err := maintain(f.env, f.acts, v1alpha1.MaintenanceRequest{Location: f.url, Mode: "full"})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.MaintenanceResult{Ran: true, Mode: "full"}, *res)

	r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "inspector"})
	require.NoError(t, err)
	params, err := maintenance.GetParams(context.Background(), r)
	require.NoError(t, err)
	assert.Equal(t, "cairn@"+kopiarepo.MaintenanceHostname, params.Owner)

	other := f.worker(t, "worker-b", password)
	res, err = maintain(f.newEnv(other), other, v1alpha1.MaintenanceRequest{Location: f.url, Mode: "quick"})
	require.NoError(t, err, "another worker maintains under the same identity")
	assert.True(t, res.Ran)
}

// TestMaintainRepositoryOwnedByAnotherClientIsNonRetryable: when another
// kopia client owns maintenance, cairn does not take it over; it fails at
// once as MaintenanceOwner.
func TestMaintainRepositoryOwnedByAnotherClientIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "laptop"})
	require.NoError(t, err)
	require.NoError(t, r.Maintain(context.Background(), "quick"), "someone's kopia takes ownership")

	_, err = maintain(f.env, f.acts, v1alpha1.MaintenanceRequest{Location: f.url, Mode: "quick"})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeMaintenanceOwner)
	assert.Contains(t, err.Error(), "laptop", "the message names the owner")
}

// TestMaintainRepositoryWithAWrongOrMissingPasswordIsNonRetryable: a
// password that does not open the repository, or none, fails at once as
// RepositoryPassword.
func TestMaintainRepositoryWithAWrongOrMissingPasswordIsNonRetryable(t *testing.T) {
	f := newFixture(t)
	f.upload(t, "b1", "data", 1)
	for _, pw := range []string{"not the password", ""} {
		acts := f.worker(t, "worker-a", pw)
		_, err := maintain(f.newEnv(acts), acts, v1alpha1.MaintenanceRequest{Location: f.url, Mode: "quick"})
		activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeRepositoryPassword)
		if pw != "" {
			assert.NotContains(t, err.Error(), pw)
		}
	}
}

// TestBeatIntervalIsAThirdOfTheTimeout: three beats per heartbeat
// timeout, never more than one a second, every 10 s without a timeout.
func TestBeatIntervalIsAThirdOfTheTimeout(t *testing.T) {
	assert.Equal(t, time.Second, beatInterval(3*time.Second))
	assert.Equal(t, 20*time.Second, beatInterval(time.Minute))
	assert.Equal(t, time.Second, beatInterval(300*time.Millisecond), "at most once a second")
	assert.Equal(t, 10*time.Second, beatInterval(0))
}
