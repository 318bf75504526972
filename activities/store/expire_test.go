package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
)

// observed returns activities whose log the test can read.
func observed() (*Activities, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return &Activities{Log: zap.New(core)}, logs
}

func (f *fixture) listExpired(t *testing.T, fn any) []string {
	t.Helper()
	return f.listExpiredPage(t, fn, v1alpha1.ExpireBackupsRequest{Location: f.url})
}

func (f *fixture) listExpiredPage(t *testing.T, fn any, req v1alpha1.ExpireBackupsRequest) []string {
	t.Helper()
	val, err := f.env.ExecuteActivity(fn, req)
	require.NoError(t, err)
	var names []string
	require.NoError(t, val.Get(&names))
	return names
}

// TestListExpiredBackupsOnlyCommittedCairnBackupsPastExpiry: a committed
// cairn backup past its expiry is listed; one not yet expired, one without
// expiry, one still running, Velero's, and one whose backup.json does not
// decode (with a warning naming it) are not.
func TestListExpiredBackupsOnlyCommittedCairnBackupsPastExpiry(t *testing.T) {
	acts, logs := observed()
	f := newFixture(t, acts)
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	commit := func(name string, exp *time.Time) {
		f.writeJSON(t, location.Backup(name).Metadata(), v1alpha1.BackupMetadata{Name: name,
			Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted, Expiration: exp}})
	}
	commit("old", &past)
	commit("fresh", &future)
	commit("forever", nil)
	f.write(t, location.Backup("running").Work()+"plan.json", `{}`)
	f.write(t, location.Backup("velero").VeleroMetadata(),
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"velero"},"status":{"phase":"Completed","expiration":"2020-01-01T00:00:00Z"}}`)
	f.write(t, location.Backup("broken").Metadata(), `{"status":`)

	assert.Equal(t, []string{"old"}, f.listExpired(t, acts.ListExpiredBackups))
	warned := logs.FilterMessage("Unreadable backup metadata; not expiring it").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "broken", warned[0].ContextMap()["backup"])
}

// TestListExpiredEtcdSnapshotsOnlyCompletePastExpiry: a complete snapshot
// past its expiry is listed; one not yet expired, one without expiry, one
// without snapshot.json, an unreadable one (with a warning) and an expired
// backup are not.
func TestListExpiredEtcdSnapshotsOnlyCompletePastExpiry(t *testing.T) {
	acts, logs := observed()
	f := newFixture(t, acts)
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	commit := func(name string, exp *time.Time) {
		f.writeJSON(t, location.EtcdSnapshot(name).Metadata(), v1alpha1.EtcdSnapshotMetadata{Name: name,
			Status: v1alpha1.EtcdSnapshotStatus{Phase: v1alpha1.PhaseCompleted, Expiration: exp}})
	}
	commit("old", &past)
	commit("fresh", &future)
	commit("forever", nil)
	f.write(t, location.EtcdSnapshot("partial").Snapshot(), "bolt")
	f.write(t, location.EtcdSnapshot("broken").Metadata(), `[`)
	f.writeJSON(t, location.Backup("expired-backup").Metadata(), v1alpha1.BackupMetadata{Name: "expired-backup",
		Status: v1alpha1.BackupStatus{Expiration: &past}})

	assert.Equal(t, []string{"old"}, f.listExpired(t, acts.ListExpiredEtcdSnapshots))
	warned := logs.FilterMessage("Unreadable etcd snapshot metadata; not expiring it").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "broken", warned[0].ContextMap()["etcdSnapshot"])
}

// TestListExpiredGoesPageByPageInNameOrder: a listing returns at most
// Limit names, in name order, after After; paging through finds each
// expired backup and etcd snapshot once.
func TestListExpiredGoesPageByPageInNameOrder(t *testing.T) {
	f := newFixture(t, nil)
	past := time.Now().Add(-time.Hour)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("b-%02d", 6-i) // written out of order
		want = append([]string{name}, want...)
		f.writeJSON(t, location.Backup(name).Metadata(), v1alpha1.BackupMetadata{Name: name,
			Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted, Expiration: &past}})
		f.writeJSON(t, location.EtcdSnapshot(name).Metadata(), v1alpha1.EtcdSnapshotMetadata{Name: name,
			Status: v1alpha1.EtcdSnapshotStatus{Phase: v1alpha1.PhaseCompleted, Expiration: &past}})
	}
	for _, fn := range []any{f.acts.ListExpiredBackups, f.acts.ListExpiredEtcdSnapshots} {
		var got []string
		req := v1alpha1.ExpireBackupsRequest{Location: f.url, Limit: 3}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 4, "paging does not end")
			page := f.listExpiredPage(t, fn, req)
			require.LessOrEqual(t, len(page), 3)
			got = append(got, page...)
			if len(page) < req.Limit {
				break
			}
			req.After = page[len(page)-1]
		}
		assert.Equal(t, want, got)
	}
}

// TestListExpiredOfAnEmptyLocation: nothing to expire is an empty list.
func TestListExpiredOfAnEmptyLocation(t *testing.T) {
	f := newFixture(t, nil)
	assert.Empty(t, f.listExpired(t, f.acts.ListExpiredBackups))
	assert.Empty(t, f.listExpired(t, f.acts.ListExpiredEtcdSnapshots))
}

func (f *fixture) scheduleRuns(t *testing.T, spec v1alpha1.ScheduleSpec) *v1alpha1.ScheduleRunsResult {
	t.Helper()
	val, err := f.env.ExecuteActivity(f.acts.ListScheduleRuns, v1alpha1.ScheduleRunsInput{Schedule: spec})
	require.NoError(t, err)
	var res v1alpha1.ScheduleRunsResult
	require.NoError(t, val.Get(&res))
	return &res
}

// TestListScheduleRunsOfABackupSchedule: the schedule's finished backups
// in its template's location, committed and failed, with the interval its
// spec gives.
func TestListScheduleRunsOfABackupSchedule(t *testing.T) {
	f := newFixture(t, nil)
	done := time.Date(2026, 11, 22, 2, 3, 0, 0, time.UTC)
	f.writeJSON(t, location.Backup("nightly-20261122020000").Metadata(), v1alpha1.BackupMetadata{
		Spec:   v1alpha1.BackupSpec{Name: "nightly-20261122020000", Schedule: "nightly"},
		Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted, CompletionTime: &done, TarballBytes: 42}})
	f.write(t, location.Backup("nightly-20261121020000").Logs(), "log")
	f.writeJSON(t, location.EtcdSnapshot("nightly-20261120020000").Metadata(), v1alpha1.EtcdSnapshotMetadata{
		Name: "nightly-20261120020000", Spec: v1alpha1.EtcdSnapshotSpec{Schedule: "nightly"}})

	spec := v1alpha1.ScheduleSpec{Name: "nightly", Every: &metav1.Duration{Duration: 6 * time.Hour},
		Template: v1alpha1.BackupSpec{StorageLocation: f.url}}
	res := f.scheduleRuns(t, spec)
	assert.ElementsMatch(t, []v1alpha1.ScheduleRun{
		{Name: "nightly-20261122020000", Phase: v1alpha1.PhaseCompleted, Time: done, Bytes: 42},
		{Name: "nightly-20261121020000", Phase: v1alpha1.PhaseFailed, Time: time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)},
	}, res.Runs)
	assert.Equal(t, 6*time.Hour, res.Interval)
}

// TestListScheduleRunsOfAnEtcdSchedule: an etcd-snapshot schedule's runs
// are its complete snapshots, not backups of the same names.
func TestListScheduleRunsOfAnEtcdSchedule(t *testing.T) {
	f := newFixture(t, nil)
	done := time.Date(2026, 11, 22, 2, 3, 0, 0, time.UTC)
	f.writeJSON(t, location.EtcdSnapshot("etcd-20261122020000").Metadata(), v1alpha1.EtcdSnapshotMetadata{
		Name: "etcd-20261122020000", Spec: v1alpha1.EtcdSnapshotSpec{Schedule: "etcd"},
		Status: v1alpha1.EtcdSnapshotStatus{Phase: v1alpha1.PhaseCompleted, CompletionTime: &done, Bytes: 7}})
	f.write(t, location.Backup("etcd-20261121020000").Logs(), "log")

	spec := v1alpha1.ScheduleSpec{Name: "etcd", Kind: v1alpha1.KindEtcdSnapshot, Cron: "0 2 * * *",
		Template: v1alpha1.BackupSpec{StorageLocation: f.url}}
	res := f.scheduleRuns(t, spec)
	assert.Equal(t, []v1alpha1.ScheduleRun{{Name: "etcd-20261122020000", Phase: v1alpha1.PhaseCompleted, Time: done, Bytes: 7}}, res.Runs)
	assert.Equal(t, 24*time.Hour, res.Interval)
}

// TestListingsWithABadLocationAreNonRetryable: a location URL that cannot
// be opened fails each listing for good, typed as a location error.
func TestListingsWithABadLocationAreNonRetryable(t *testing.T) {
	f := newFixture(t, nil)
	bad := v1alpha1.ExpireBackupsRequest{Location: "ftp://host/x"}
	_, err := f.env.ExecuteActivity(f.acts.ListExpiredBackups, bad)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	_, err = f.env.ExecuteActivity(f.acts.ListExpiredEtcdSnapshots, bad)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	_, err = f.env.ExecuteActivity(f.acts.ListScheduleRuns, v1alpha1.ScheduleRunsInput{
		Schedule: v1alpha1.ScheduleSpec{Name: "nightly", Template: v1alpha1.BackupSpec{StorageLocation: "ftp://host/x"}}})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
}
