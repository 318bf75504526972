package store

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
)

var b1 = location.Backup("b1")

const (
	cmA   = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"},"data":{"k":"1"}}`
	cmB   = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"shop"}}`
	web   = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`
	nsObj = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`
)

// seedCollected writes what collection leaves for backup b1: parts of
// three types, one type's result, and an earlier activity's log chunk.
func seedCollected(t *testing.T, f *fixture) {
	t.Helper()
	f.write(t, b1.Part("configmaps", 1, 0), cmA+"\n"+cmB+"\n")
	f.write(t, b1.Part("deployments.apps", 1, 0), web+"\n")
	f.write(t, b1.Part("namespaces", 0, 0), nsObj+"\n")
	f.writeJSON(t, b1.TypeResult("configmaps"), cluster.TypeResult{Resource: "configmaps", Items: 2,
		Errors: []string{"cm broken"}, Warnings: []string{"w1", "w2"}})
	f.write(t, b1.LogsPrefix()+"00000000000000000001-PlanBackup-1-1.jsonl", `{"level":"info","msg":"planned"}`+"\n")
}

var (
	startTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	failedOp  = v1alpha1.Operation{ID: "op1", Kind: v1alpha1.OperationKindCSISnapshot, Phase: v1alpha1.OperationFailed,
		Volume: v1alpha1.Volume{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1"}, Error: "snapshot timed out"}
	doneOp = v1alpha1.Operation{ID: "op2", Kind: v1alpha1.OperationKindCSISnapshot, Phase: v1alpha1.OperationCompleted,
		Volume:   v1alpha1.Volume{Namespace: "shop", Claim: "logs", PersistentVolume: "pv-2"},
		Snapshot: &v1alpha1.SnapshotInfo{Name: "snap-2", Content: "content-2", Handle: "h-2"}}
)

func finalizeInput(f *fixture, ops ...v1alpha1.Operation) v1alpha1.FinalizeInput {
	start := startTime
	began := startTime.Add(time.Minute) // when finalizing began, per the workflow
	return v1alpha1.FinalizeInput{
		Spec: v1alpha1.BackupSpec{Name: "b1", StorageLocation: f.url, IncludedNamespaces: []string{"shop"}},
		Status: v1alpha1.BackupStatus{Name: "b1", Phase: v1alpha1.PhaseCompleted, StartTime: &start, CompletionTime: &began,
			ItemsDone: 4, Warnings: 99, Skipped: []v1alpha1.SkippedResource{{Resource: "secrets", Reason: "excluded"}}, Operations: ops},
		WorkRef: "backup-b1", RunID: "run-1",
	}
}

func (f *fixture) finalize(t *testing.T, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
	t.Helper()
	return activitytest.Run[v1alpha1.FinalizeResult](t, f.env, f.acts.FinalizeBackup, in)
}

// TestFinalizeStreamsEveryPartIntoTheTarball: each item lands at its
// version-less and preferred-version path (version from apiVersion,
// cluster-scoped under cluster/), and the result counts the items and the
// stored tarball's bytes.
func TestFinalizeStreamsEveryPartIntoTheTarball(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	res, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)

	assert.Equal(t, map[string]string{
		"resources/configmaps/namespaces/shop/a.json":                             cmA,
		"resources/configmaps/v1-preferredversion/namespaces/shop/a.json":         cmA,
		"resources/configmaps/namespaces/shop/b.json":                             cmB,
		"resources/configmaps/v1-preferredversion/namespaces/shop/b.json":         cmB,
		"resources/deployments.apps/namespaces/shop/web.json":                     web,
		"resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json": web,
		"resources/namespaces/cluster/shop.json":                                  nsObj,
		"resources/namespaces/v1-preferredversion/cluster/shop.json":              nsObj,
	}, f.tarballObjects(t))

	assert.Equal(t, 4, res.Items)
	st, err := os.Stat(filepath.Join(f.dir, "backups", "b1", "resources.tar.gz"))
	require.NoError(t, err)
	assert.Equal(t, st.Size(), res.TarballBytes)
}

// tarMTimes returns the modification time of every entry of b1's tarball.
func tarMTimes(t *testing.T, f *fixture) map[time.Time]int {
	t.Helper()
	r, err := f.loc.NewReader(context.Background(), b1.Resources())
	require.NoError(t, err)
	defer r.Close()
	zr, err := gzip.NewReader(r)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	out := map[time.Time]int{}
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		out[hdr.ModTime.UTC()]++
	}
	return out
}

// TestFinalizeStampsEntriesWithTheStartTime: every entry carries the
// backup's start time (the epoch when there is none), not the time of
// writing, so the same backup always gives the same bytes.
func TestFinalizeStampsEntriesWithTheStartTime(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	_, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.Equal(t, map[time.Time]int{startTime: 9}, tarMTimes(t, f), "metadata/version and 8 item files")

	f = newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f)
	in.Status.StartTime = nil
	_, err = f.finalize(t, in)
	require.NoError(t, err)
	assert.Equal(t, map[time.Time]int{time.Unix(0, 0).UTC(): 9}, tarMTimes(t, f))
}

// TestFinalizeWritesResultsFromTypesAndFailedVolumes: results.json holds
// every type's errors and warnings, one error per failed volume naming its
// claim, and the plan's skipped types.
func TestFinalizeWritesResultsFromTypesAndFailedVolumes(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	res, err := f.finalize(t, finalizeInput(f, failedOp, doneOp))
	require.NoError(t, err)

	var results v1alpha1.BackupResults
	f.readJSON(t, b1.Results(), &results)
	assert.Equal(t, []v1alpha1.ResultEntry{
		{Resource: "configmaps", Message: "cm broken"},
		{Resource: "persistentvolumeclaims", Namespace: "shop", Name: "data", Message: "snapshot timed out"},
	}, results.Errors)
	assert.Equal(t, []v1alpha1.ResultEntry{{Resource: "configmaps", Message: "w1"}, {Resource: "configmaps", Message: "w2"}}, results.Warnings)
	assert.Equal(t, []v1alpha1.SkippedResource{{Resource: "secrets", Reason: "excluded"}}, results.Skipped)
	assert.Equal(t, 2, res.Errors)
	assert.Equal(t, 2, res.Warnings)
}

// TestFinalizeRecordsOperationsAndVolumes: a backup with volumes gets
// operations.json (the operations as they ended) and volumes.json (one
// record per volume).
func TestFinalizeRecordsOperationsAndVolumes(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	_, err := f.finalize(t, finalizeInput(f, failedOp, doneOp))
	require.NoError(t, err)

	var ops v1alpha1.OperationsFile
	f.readJSON(t, b1.Operations(), &ops)
	assert.Equal(t, []v1alpha1.Operation{failedOp, doneOp}, ops.Operations)
	var vols v1alpha1.VolumesFile
	f.readJSON(t, b1.Volumes(), &vols)
	assert.Equal(t, []v1alpha1.VolumeRecord{
		{Volume: failedOp.Volume, Phase: v1alpha1.OperationFailed, Error: "snapshot timed out"},
		{Volume: doneOp.Volume, Phase: v1alpha1.OperationCompleted, Snapshot: doneOp.Snapshot},
	}, vols.Volumes)
}

// TestFinalizeWithoutVolumesWritesNoVolumeFiles: a backup without volumes
// has neither operations.json nor volumes.json.
func TestFinalizeWithoutVolumesWritesNoVolumeFiles(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	_, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.False(t, f.exists(t, b1.Operations()))
	assert.False(t, f.exists(t, b1.Volumes()))
}

// TestFinalizeCommitsBackupJSON: backup.json records the spec, the final
// status with the stored tarball's size and the results' warning count,
// the workflow run, and as completion time the moment of commit, not
// when finalizing began.
func TestFinalizeCommitsBackupJSON(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f)
	before := time.Now()
	res, err := f.finalize(t, in)
	require.NoError(t, err)

	var meta v1alpha1.BackupMetadata
	f.readJSON(t, b1.Metadata(), &meta)
	assert.Equal(t, v1alpha1.MetadataAPIVersion, meta.APIVersion)
	assert.Equal(t, v1alpha1.MetadataKindBackup, meta.Kind)
	assert.Equal(t, "b1", meta.Name)
	assert.Equal(t, tarball.FormatVersion, meta.FormatVersion)
	assert.Equal(t, in.Spec, meta.Spec)
	assert.Equal(t, "backup-b1", meta.WorkflowID)
	assert.Equal(t, "run-1", meta.RunID)
	assert.Equal(t, v1alpha1.PhaseCompleted, meta.Status.Phase)
	assert.Equal(t, 4, meta.Status.ItemsDone)
	assert.Equal(t, 2, meta.Status.Warnings, "the results' warnings, not the input's count")
	assert.Equal(t, res.TarballBytes, meta.Status.TarballBytes)
	assert.NotZero(t, meta.Status.TarballBytes)

	require.NotNil(t, meta.Status.CompletionTime)
	assert.False(t, meta.Status.CompletionTime.Before(before), "completion is the commit, not %v", in.Status.CompletionTime)
	require.NotNil(t, res.CompletionTime)
	assert.True(t, meta.Status.CompletionTime.Equal(*res.CompletionTime))

	// The manifest that backup.json vouches for digests every stored object.
	m, err := f.loc.ReadManifest(context.Background(), b1, meta.ManifestSHA256)
	require.NoError(t, err)
	assert.Equal(t, []string{"logs.jsonl.gz", "resources.tar.gz", "results.json"}, m.Names(), "a backup without volumes has no volume files")
	assert.Equal(t, res.TarballBytes, m.Objects["resources.tar.gz"].Size)
}

// TestFinalizeJoinsTheLogBeforeCommitting: logs.jsonl.gz holds the earlier
// activities' chunks first, then this attempt's lines up to the commit.
func TestFinalizeJoinsTheLogBeforeCommitting(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	_, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.Equal(t, []string{"planned", "Committing backup"}, f.logMessages(t, b1.Logs()))
}

// TestFinalizeRemovesTheIntermediateStateOnceCommitted: once
// backup.json is written, the parts, the plan and the activities' log
// chunks go (finalize's own chunk is not stored either); the backup's
// objects stay.
func TestFinalizeRemovesTheIntermediateStateOnceCommitted(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	require.NotEmpty(t, f.keys(t, b1.Work()))
	_, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.Empty(t, f.keys(t, b1.Work()))
	assert.Empty(t, f.keys(t, b1.LogsPrefix()))
	assert.Equal(t, []string{b1.Metadata(), b1.Logs(), b1.Manifest(), b1.Resources(), b1.Results()}, f.keys(t, b1.Prefix()))
}

// TestFinalizeAfterCommitOnlyReports: run again once backup.json exists
// (a retry after success), finalize reports what was committed and
// neither rewrites anything nor counts the run again; it only removes
// intermediate state left behind.
func TestFinalizeAfterCommitOnlyReports(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f, failedOp)
	first, err := f.finalize(t, in)
	require.NoError(t, err)
	meta, err := f.loc.ReadAll(context.Background(), b1.Metadata())
	require.NoError(t, err)
	runs := counter(t, "cairn_runs_total", map[string]string{"kind": "backup", "phase": "Completed"})
	bytes := counter(t, "cairn_backup_bytes_total", nil)

	// Collection's state changed since: a rerun must not rebuild from it.
	f.write(t, b1.Part("configmaps", 2, 0), `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late","namespace":"shop"}}`+"\n")
	require.NoError(t, f.loc.Delete(context.Background(), b1.Results()))

	again, err := f.finalize(t, in)
	require.NoError(t, err)
	assert.Equal(t, first.Items, again.Items)
	assert.Equal(t, first.TarballBytes, again.TarballBytes)
	require.NotNil(t, again.CompletionTime)
	assert.True(t, first.CompletionTime.Equal(*again.CompletionTime), "the committed completion time, not a new one")

	after, err := f.loc.ReadAll(context.Background(), b1.Metadata())
	require.NoError(t, err)
	assert.Equal(t, string(meta), string(after), "backup.json is not rewritten")
	assert.False(t, f.exists(t, b1.Results()), "nothing is rewritten")
	assert.Empty(t, f.keys(t, b1.Work()), "the part left behind is removed")
	assert.Equal(t, runs, counter(t, "cairn_runs_total", map[string]string{"kind": "backup", "phase": "Completed"}))
	assert.Equal(t, bytes, counter(t, "cairn_backup_bytes_total", nil))
}

// TestFinalizeRefusesABackupJSONOfAnotherRun: the "already committed"
// shortcut holds only for this run's own backup.json; one planted in the
// bucket, or written by another run of the same name, fails the run.
func TestFinalizeRefusesABackupJSONOfAnotherRun(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f)
	_, err := f.finalize(t, in)
	require.NoError(t, err)
	planted, err := f.loc.ReadAll(context.Background(), b1.Metadata())
	require.NoError(t, err)

	in.RunID = "run-2"
	_, err = f.finalize(t, in)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeBackupConflict)
	assert.ErrorContains(t, err, `committed by another run (workflow "backup-b1", run "run-1")`)
	after, err := f.loc.ReadAll(context.Background(), b1.Metadata())
	require.NoError(t, err)
	assert.Equal(t, string(planted), string(after), "the other run's backup.json is left as it is")
}

// TestFinalizeCountsTheCommittedRun: committing counts one run of its
// phase and the tarball's bytes.
func TestFinalizeCountsTheCommittedRun(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f)
	in.Status.Phase = v1alpha1.PhasePartiallyFailed
	labels := map[string]string{"kind": "backup", "phase": "PartiallyFailed"}
	runs, bytes := counter(t, "cairn_runs_total", labels), counter(t, "cairn_backup_bytes_total", nil)
	res, err := f.finalize(t, in)
	require.NoError(t, err)
	assert.Equal(t, runs+1, counter(t, "cairn_runs_total", labels))
	assert.Equal(t, bytes+float64(res.TarballBytes), counter(t, "cairn_backup_bytes_total", nil))
}

// TestFinalizeCommitsOnlyWhenEverythingElseIsStored: backup.json is the
// commit marker, written last: when any earlier object cannot be stored,
// finalize fails (for a retry) and the backup stays uncommitted.
func TestFinalizeCommitsOnlyWhenEverythingElseIsStored(t *testing.T) {
	for _, blocked := range []string{b1.Resources(), b1.Results(), b1.Operations(), b1.Volumes(), b1.Logs(), b1.Manifest()} {
		t.Run(filepath.Base(blocked), func(t *testing.T) {
			f := newFixture(t, nil)
			seedCollected(t, f)
			f.blockKey(t, blocked)
			_, err := f.finalize(t, finalizeInput(f, failedOp))
			activitytest.RequireRetryable(t, err)
			assert.ErrorContains(t, err, `key "`+blocked+`"`, "it failed where it was made to")
			assert.False(t, f.exists(t, b1.Metadata()), "no backup.json when %s failed", blocked)
			assert.NotEmpty(t, f.keys(t, b1.Work()), "the retry finds the parts")
		})
	}
}

// TestFinalizeRejectsAnItemWithoutName: a part line without apiVersion or
// name fails the finalize and leaves no tarball and no commit.
func TestFinalizeRejectsAnItemWithoutName(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	bad := b1.Part("secrets", 1, 0)
	f.write(t, bad, `{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"shop"}}`+"\n")
	_, err := f.finalize(t, finalizeInput(f))
	require.Error(t, err)
	assert.ErrorContains(t, err, "item in "+bad+" has no apiVersion or name")
	assert.False(t, f.exists(t, b1.Resources()), "the half-written tarball is discarded")
	assert.False(t, f.exists(t, b1.Metadata()))
}

// TestFinalizeLeavesAnUnreadableBackupJSONAlone: a backup.json that exists
// but does not decode is an error, never overwritten by a new commit.
func TestFinalizeLeavesAnUnreadableBackupJSONAlone(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	f.write(t, b1.Metadata(), `{"name":`)
	_, err := f.finalize(t, finalizeInput(f))
	require.Error(t, err)
	assert.ErrorContains(t, err, "decode "+b1.Metadata())
	data, err := f.loc.ReadAll(context.Background(), b1.Metadata())
	require.NoError(t, err)
	assert.Equal(t, `{"name":`, string(data))
	assert.False(t, f.exists(t, b1.Resources()))
}

// TestFinalizeWithABadLocationIsNonRetryable: a location URL that cannot
// be opened fails for good, typed as a location error.
func TestFinalizeWithABadLocationIsNonRetryable(t *testing.T) {
	f := newFixture(t, nil)
	in := finalizeInput(f)
	in.Spec.StorageLocation = "ftp://host/x"
	_, err := f.finalize(t, in)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
}

// TestFinalizeWritesFailedHooksAsResults: a failed hook with onError Fail
// is an error of its pod, one with Continue a warning, both counted.
func TestFinalizeWritesFailedHooksAsResults(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := finalizeInput(f)
	in.Status.Hooks = []v1alpha1.HookResult{
		{Pod: "shop/db", Phase: v1alpha1.HookPre, Source: "spec hook freeze", Container: "db", OnError: v1alpha1.HookFail,
			ExitCode: 3, Error: "exit code 3", Stderr: "cannot freeze\n"},
		{Pod: "shop/web", Phase: v1alpha1.HookPost, Source: "post.hook.backup.velero.io/", Container: "web", OnError: v1alpha1.HookContinue,
			ExitCode: -1, Error: "timed out after 2s"},
		{Pod: "shop/ok", Phase: v1alpha1.HookPre, Container: "ok"},
	}
	res, err := f.finalize(t, in)
	require.NoError(t, err)

	var results v1alpha1.BackupResults
	f.readJSON(t, b1.Results(), &results)
	assert.Contains(t, results.Errors, v1alpha1.ResultEntry{Resource: "pods", Namespace: "shop", Name: "db",
		Message: "pre hook (spec hook freeze) in container db failed: exit code 3: cannot freeze"})
	assert.Contains(t, results.Warnings, v1alpha1.ResultEntry{Resource: "pods", Namespace: "shop", Name: "web",
		Message: "post hook (post.hook.backup.velero.io/) in container web failed: timed out after 2s"})
	assert.Equal(t, 2, res.Errors)
	assert.Equal(t, 3, res.Warnings)
}
