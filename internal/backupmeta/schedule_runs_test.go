package backupmeta

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
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
	commit := func(name, schedule string, phase v1alpha1.Phase) {
		meta := v1alpha1.BackupMetadata{Name: name, Spec: v1alpha1.BackupSpec{Name: name, Schedule: schedule},
			Status: v1alpha1.BackupStatus{Phase: phase, CompletionTime: &done, TarballBytes: 1234}}
		data, err := json.Marshal(meta)
		require.NoError(t, err)
		require.NoError(t, loc.WriteAll(ctx, location.Backup(name).Metadata(), data))
	}
	commit("nightly-20261122020000", "nightly", v1alpha1.PhaseCompleted)
	commit("nightly-20261121020000", "nightly", v1alpha1.PhasePartiallyFailed)
	commit("nightly-x-20261122020000", "nightly-x", v1alpha1.PhaseCompleted)
	commit("nightly-by-hand", "", v1alpha1.PhaseCompleted)
	require.NoError(t, loc.WriteAll(ctx, location.Backup("nightly-20261120020000").Logs(), []byte("log")))         // failed
	require.NoError(t, loc.WriteAll(ctx, location.Backup("nightly-20261123020000").LogsPrefix()+"0", []byte("x"))) // running

	var unreadable []string
	runs, err := ScheduleRuns(ctx, loc, "nightly", Hooks{Unreadable: func(name string, _ error) { unreadable = append(unreadable, name) }})
	require.NoError(t, err)
	assert.Empty(t, unreadable)
	assert.ElementsMatch(t, []v1alpha1.ScheduleRun{
		{Name: "nightly-20261122020000", Phase: v1alpha1.PhaseCompleted, Time: done, Bytes: 1234},
		{Name: "nightly-20261121020000", Phase: v1alpha1.PhasePartiallyFailed, Time: done, Bytes: 1234},
		{Name: "nightly-20261120020000", Phase: v1alpha1.PhaseFailed, Time: time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)},
	}, runs)
}
