package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
)

const veleroBackupJSON = `{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"b1"},"status":{"phase":"Completed"}}`

var s1 = location.EtcdSnapshot("s1")

// seedEtcd writes a complete etcd snapshot s1, a neighbour s10, and a
// backup that shares s1's name.
func seedEtcd(t *testing.T, f *fixture) {
	t.Helper()
	f.write(t, s1.Snapshot(), "bolt")
	f.write(t, s1.Metadata(), `{"name":"s1"}`)
	f.write(t, location.EtcdSnapshot("s10").Metadata(), `{"name":"s10"}`)
	f.write(t, location.Backup("s1").Metadata(), `{"name":"s1"}`)
}

func (f *fixture) deleteData(t *testing.T, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
	t.Helper()
	req.Location = f.url
	return activitytest.Run[v1alpha1.DeleteBackupResult](t, f.env, f.acts.DeleteBackupData, req)
}

// TestDeleteRemovesEveryObjectOfTheBackup: every object under the backup's
// prefix goes and is counted; a backup whose name extends it stays.
func TestDeleteRemovesEveryObjectOfTheBackup(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	objects := len(f.keys(t, b1.Prefix()))
	res, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	require.NoError(t, err)
	assert.Equal(t, &v1alpha1.DeleteBackupResult{Backup: "b1", ObjectsDeleted: objects}, res)
	assert.Empty(t, f.keys(t, b1.Prefix()))
	assert.True(t, f.exists(t, location.Backup("b10").Plan()))
}

// TestDeleteRetryAfterSuccessIsHarmless: deleting a backup that is already
// gone succeeds and deletes nothing.
func TestDeleteRetryAfterSuccessIsHarmless(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	_, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	require.NoError(t, err)
	res, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ObjectsDeleted)
}

// TestDeleteRemovesAFailedBackupsLog: a backup that never committed (only
// its log is left) is deleted too.
func TestDeleteRemovesAFailedBackupsLog(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, b1.Logs(), "log")
	res, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "retention"})
	require.NoError(t, err)
	assert.Equal(t, 1, res.ObjectsDeleted)
	assert.False(t, f.exists(t, b1.Logs()))
}

// TestDeleteRefusesAVeleroBackup: a backup only Velero wrote is Velero's
// to delete: a non-retryable invalid-spec error, and nothing is deleted.
func TestDeleteRefusesAVeleroBackup(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, b1.VeleroMetadata(), veleroBackupJSON)
	f.write(t, b1.VeleroResources(), "tarball")
	_, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeInvalidSpec)
	assert.ErrorContains(t, err, "written by Velero")
	assert.Equal(t, []string{b1.VeleroResources(), b1.VeleroMetadata()}, f.keys(t, b1.Prefix()))
}

// TestDeleteCairnBackupInAVeleroFolder: when cairn committed a backup in a
// folder Velero also wrote, the backup is cairn's and is deleted whole.
func TestDeleteCairnBackupInAVeleroFolder(t *testing.T) {
	f := newFixture(t, nil)
	f.write(t, b1.VeleroMetadata(), veleroBackupJSON)
	f.write(t, b1.Metadata(), `{"name":"b1"}`)
	res, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	require.NoError(t, err)
	assert.Equal(t, 2, res.ObjectsDeleted)
	assert.Empty(t, f.keys(t, b1.Prefix()))
}

// TestDeleteEtcdSnapshot: an etcd snapshot's objects go, under etcd/
// only: a backup of the same name and a snapshot whose name extends it
// stay; deleting it again succeeds.
func TestDeleteEtcdSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	seedEtcd(t, f)
	req := v1alpha1.DeleteBackupRequest{Backup: "s1", Reason: "expired", Kind: v1alpha1.KindEtcdSnapshot}
	res, err := f.deleteData(t, req)
	require.NoError(t, err)
	assert.Equal(t, "s1", res.Backup)
	assert.NotZero(t, res.ObjectsDeleted)
	assert.Empty(t, f.keys(t, s1.Prefix()))
	assert.True(t, f.exists(t, location.EtcdSnapshot("s10").Metadata()))
	assert.True(t, f.exists(t, location.Backup("s1").Metadata()))

	res, err = f.deleteData(t, req)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ObjectsDeleted)
}

// TestDeleteRemovesTheCommitMarkerFirst: by the first object deleted
// under the prefix, backup.json (snapshot.json) is already gone, so a
// half-deleted backup is never listed as complete.
func TestDeleteRemovesTheCommitMarkerFirst(t *testing.T) {
	for _, tc := range []struct {
		name, marker, prefix string
		req                  v1alpha1.DeleteBackupRequest
		seed                 func(*testing.T, *fixture)
	}{
		{"backup", b1.Metadata(), b1.Prefix(), v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"}, seedCommitted},
		{"etcd", s1.Metadata(), s1.Prefix(), v1alpha1.DeleteBackupRequest{Backup: "s1", Reason: "requested", Kind: v1alpha1.KindEtcdSnapshot},
			func(t *testing.T, f *fixture) { seedEtcd(t, f); f.write(t, s1.Prefix()+"extra", "x") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			tc.seed(t, f)
			var markerAtFirst, objectsAtFirst = true, 0
			first := true
			// In an activity environment the first heartbeat reaches the
			// listener at once, from the activity's own goroutine.
			f.env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
				if !first {
					return
				}
				first = false
				_, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(tc.marker)))
				markerAtFirst = err == nil
				objectsAtFirst = len(f.keys(t, tc.prefix))
			})
			_, err := f.deleteData(t, tc.req)
			require.NoError(t, err)
			require.False(t, first, "no heartbeat")
			require.NotZero(t, objectsAtFirst, "the heartbeat came after everything was deleted")
			assert.False(t, markerAtFirst, "%s still there while other objects were being deleted", tc.marker)
		})
	}
}

// TestDeletePausesAfterEveryObject: DeleteInterval spaces the deletes, to
// spare a store that throttles them.
func TestDeletePausesAfterEveryObject(t *testing.T) {
	const pause = 50 * time.Millisecond
	f := newFixture(t, &Activities{Log: zap.NewNop(), DeleteInterval: pause})
	for _, k := range []string{b1.Logs(), b1.Results(), b1.Resources()} {
		f.write(t, k, "x")
	}
	start := time.Now()
	res, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "requested"})
	require.NoError(t, err)
	require.Equal(t, 3, res.ObjectsDeleted)
	assert.GreaterOrEqual(t, time.Since(start), 3*pause)
}

// TestDeleteCountsTheDeletionByReason: each deleted backup or snapshot
// counts once under its reason.
func TestDeleteCountsTheDeletionByReason(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	seedEtcd(t, f)
	labels := map[string]string{"reason": "retention"}
	before := counter(t, "cairn_backup_deletions_total", labels)
	_, err := f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "b1", Reason: "retention"})
	require.NoError(t, err)
	_, err = f.deleteData(t, v1alpha1.DeleteBackupRequest{Backup: "s1", Reason: "retention", Kind: v1alpha1.KindEtcdSnapshot})
	require.NoError(t, err)
	assert.Equal(t, before+2, counter(t, "cairn_backup_deletions_total", labels))
}

// TestDeleteWithABadLocationIsNonRetryable: a location URL that cannot be
// opened fails for good, typed as a location error.
func TestDeleteWithABadLocationIsNonRetryable(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.env.ExecuteActivity(f.acts.DeleteBackupData, v1alpha1.DeleteBackupRequest{Backup: "b1", Location: "ftp://host/x"})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
}
