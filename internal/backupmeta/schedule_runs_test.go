package backupmeta

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// TestScheduleRuns: committed runs of the schedule with their phase,
// time and size; failed runs (a log, no backup.json) as Failed; runs still
// going, other schedules' runs and hand-made backups left out.
func TestScheduleRuns(t *testing.T) {
	ctx := context.Background()
	loc, err := location.OpenPlain(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	done := time.Date(2026, 11, 22, 2, 3, 0, 0, time.UTC)
	commit := func(name, schedule string, phase workflows.Phase) {
		meta := workflows.BackupMetadata{Name: name, Spec: workflows.BackupSpec{Name: name, Schedule: schedule},
			Status: workflows.BackupStatus{Phase: phase, CompletionTime: &done, TarballBytes: 1234}}
		data, err := json.Marshal(meta)
		require.NoError(t, err)
		require.NoError(t, loc.WriteAll(ctx, location.Backup(name).Metadata(), data))
	}
	commit("nightly-20261122020000", "nightly", workflows.PhaseCompleted)
	commit("nightly-20261121020000", "nightly", workflows.PhasePartiallyFailed)
	commit("nightly-x-20261122020000", "nightly-x", workflows.PhaseCompleted)
	commit("nightly-by-hand", "", workflows.PhaseCompleted)
	require.NoError(t, loc.WriteAll(ctx, location.Backup("nightly-20261120020000").Logs(), []byte("log")))         // failed
	require.NoError(t, loc.WriteAll(ctx, location.Backup("nightly-20261123020000").LogsPrefix()+"0", []byte("x"))) // running

	var unreadable []string
	runs, err := ScheduleRuns(ctx, loc, "nightly", Hooks{Unreadable: func(name string, _ error) { unreadable = append(unreadable, name) }})
	require.NoError(t, err)
	assert.Empty(t, unreadable)
	assert.ElementsMatch(t, []workflows.ScheduleRun{
		{Name: "nightly-20261122020000", Phase: workflows.PhaseCompleted, Time: done, Bytes: 1234},
		{Name: "nightly-20261121020000", Phase: workflows.PhasePartiallyFailed, Time: done, Bytes: 1234},
		{Name: "nightly-20261120020000", Phase: workflows.PhaseFailed, Time: time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)},
	}, runs)
}
