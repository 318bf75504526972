package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
)

// seedCommitted writes a committed backup b1 whose intermediate state is
// still there, and a neighbour b10 whose prefix starts like b1's.
func seedCommitted(t *testing.T, f *fixture) {
	t.Helper()
	seedCollected(t, f)
	f.write(t, b1.Resources(), "tarball")
	f.write(t, b1.Results(), `{"errors":[],"warnings":[]}`)
	f.write(t, b1.Volumes(), `{"volumes":[]}`)
	f.write(t, b1.Logs(), "joined log")
	f.write(t, b1.Metadata(), `{"name":"b1"}`)
	f.write(t, location.Backup("b10").Plan(), `{}`)
}

func (f *fixture) cleanup(t *testing.T, in v1alpha1.CleanupInput) error {
	t.Helper()
	in.Backup, in.Location = "b1", f.url
	_, err := f.env.ExecuteActivity(f.acts.CleanupBackupWork, in)
	return err
}

// TestCleanupRemovesOnlyIntermediateState: after a committed backup,
// .work/ and .logs/ go and every result stays; cleanup stores no log chunk
// of its own, and a backup whose name extends b1's is not touched.
func TestCleanupRemovesOnlyIntermediateState(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{}))
	assert.Equal(t, []string{b1.Metadata(), b1.Logs(), b1.Resources(), b1.Results(), b1.Volumes()}, f.keys(t, b1.Prefix()))
	assert.True(t, f.exists(t, location.Backup("b10").Plan()))
}

// TestCleanupRetryAfterSuccessIsHarmless: cleaning up again, with nothing
// left to remove, succeeds and changes nothing.
func TestCleanupRetryAfterSuccessIsHarmless(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{}))
	left := f.keys(t, "")
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{}))
	assert.Equal(t, left, f.keys(t, ""))
}

// TestCleanupDiscardKeepsOnlyTheLog: a failed backup loses its tarball,
// results and intermediate state; its chunks are joined into
// logs.jsonl.gz, which ends with the discard.
func TestCleanupDiscardKeepsOnlyTheLog(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	f.write(t, b1.Resources(), "half a tarball")
	f.write(t, b1.Results(), `{}`)
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{Discard: true, Phase: v1alpha1.PhaseFailed}))
	assert.Equal(t, []string{b1.Logs()}, f.keys(t, b1.Prefix()))
	assert.Equal(t, []string{"planned", "Discarding the unfinished backup's data"}, f.logMessages(t, b1.Logs()))
}

// TestCleanupDiscardAfterAFailedCommitKeepsOnlyTheLog: a finalize that
// wrote everything but backup.json leaves operations.json and volumes.json
// too; discarding the backup removes them with the rest.
func TestCleanupDiscardAfterAFailedCommitKeepsOnlyTheLog(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	f.blockKey(t, b1.Metadata())
	_, err := f.finalize(t, finalizeInput(f, failedOp))
	activitytest.RequireRetryable(t, err)
	require.True(t, f.exists(t, b1.Volumes()), "finalize got as far as the volume files")
	f.unblockKey(t, b1.Metadata())
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{Discard: true, Phase: v1alpha1.PhaseFailed}))
	assert.Equal(t, []string{b1.Logs()}, f.keys(t, b1.Prefix()))
}

// TestCleanupDiscardRetryKeepsTheJoinedLog: a retried discard finds the
// chunks gone; it keeps the log the first attempt joined instead of
// replacing it with its own lines.
func TestCleanupDiscardRetryKeepsTheJoinedLog(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	in := v1alpha1.CleanupInput{Discard: true, Phase: v1alpha1.PhaseFailed}
	require.NoError(t, f.cleanup(t, in))
	joined, err := f.loc.ReadAll(context.Background(), b1.Logs())
	require.NoError(t, err)

	require.NoError(t, f.cleanup(t, in))
	again, err := f.loc.ReadAll(context.Background(), b1.Logs())
	require.NoError(t, err)
	assert.Equal(t, joined, again)
	assert.Equal(t, []string{b1.Logs()}, f.keys(t, b1.Prefix()))
}

// TestCleanupNeverDiscardsACommittedBackup: with backup.json present a
// discard only removes intermediate state: results and log stay as they
// were, and no ended run is counted.
func TestCleanupNeverDiscardsACommittedBackup(t *testing.T) {
	f := newFixture(t, nil)
	seedCommitted(t, f)
	labels := map[string]string{"kind": "backup", "phase": "Failed"}
	runs := counter(t, "cairn_runs_total", labels)
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{Discard: true, Phase: v1alpha1.PhaseFailed}))
	assert.Equal(t, []string{b1.Metadata(), b1.Logs(), b1.Resources(), b1.Results(), b1.Volumes()}, f.keys(t, b1.Prefix()))
	data, err := f.loc.ReadAll(context.Background(), b1.Logs())
	require.NoError(t, err)
	assert.Equal(t, "joined log", string(data))
	assert.Equal(t, runs, counter(t, "cairn_runs_total", labels))
}

// TestCleanupDiscardCountsTheEndedRun: discarding counts the run as ended
// in the phase the workflow gives.
func TestCleanupDiscardCountsTheEndedRun(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	labels := map[string]string{"kind": "backup", "phase": "Canceled"}
	runs := counter(t, "cairn_runs_total", labels)
	start := time.Now().Add(-time.Minute)
	require.NoError(t, f.cleanup(t, v1alpha1.CleanupInput{Discard: true, Phase: v1alpha1.PhaseCanceled, StartTime: &start}))
	assert.Equal(t, runs+1, counter(t, "cairn_runs_total", labels))
}

// TestCleanupWithABadLocationIsNonRetryable: a location URL that cannot be
// opened fails for good, typed as a location error.
func TestCleanupWithABadLocationIsNonRetryable(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.env.ExecuteActivity(f.acts.CleanupBackupWork, v1alpha1.CleanupInput{Backup: "b1", Location: "ftp://host/x"})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
}
