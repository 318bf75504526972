package backupmeta

import (
	"context"
	"errors"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// ScheduleRuns returns the finished runs of schedule that location holds:
// committed backups (whose backup.json names the schedule) with their
// phase, completion time and tarball size, and failed or canceled runs,
// which left only their log, as Failed. A run still going has neither
// and is left out, and so is a run whose backup.json cannot be decoded.
func ScheduleRuns(ctx context.Context, loc *location.Location, schedule string, hooks Hooks) ([]v1alpha1.ScheduleRun, error) {
	names, err := loc.DirsStartingWith(ctx, location.BackupsPrefix(), schedule+"-")
	if err != nil {
		return nil, err
	}
	runs := []v1alpha1.ScheduleRun{}
	for i, name := range names {
		hooks.progress(i)
		due, ok := v1alpha1.ScheduledRunTime(schedule, name)
		if !ok {
			continue // another schedule's run, or a backup named by hand
		}
		meta, _, err := Read(ctx, loc, name)
		switch {
		case err == nil:
			if meta.Spec.Schedule != schedule {
				continue
			}
			run := v1alpha1.ScheduleRun{Name: name, Phase: meta.Status.Phase, Time: due, Bytes: meta.Status.TarballBytes,
				ImmutableUntil: meta.ImmutableUntil}
			if meta.Status.CompletionTime != nil {
				run.Time = *meta.Status.CompletionTime
			}
			runs = append(runs, run)
		case errors.Is(err, location.ErrNotFound):
			ended, err := loc.Exists(ctx, location.Backup(name).Logs())
			if err != nil {
				return nil, err
			}
			if ended {
				runs = append(runs, v1alpha1.ScheduleRun{Name: name, Phase: v1alpha1.PhaseFailed, Time: due})
			}
		default:
			hooks.unreadable(name, err)
		}
	}
	return runs, nil
}
