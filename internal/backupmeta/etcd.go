package backupmeta

import (
	"context"
	"errors"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// ReadEtcdSnapshot returns the committed snapshot.json of the etcd
// snapshot called name; an error wrapping location.ErrNotFound when there
// is none.
func ReadEtcdSnapshot(ctx context.Context, loc *location.Location, name string) (*workflows.EtcdSnapshotMetadata, error) {
	var meta workflows.EtcdSnapshotMetadata
	if err := loc.ReadJSON(ctx, location.EtcdSnapshot(name).Metadata(), &meta); err != nil {
		return nil, err
	}
	return &meta, nil
}

// EtcdSnapshots returns the committed etcd snapshots of a location whose
// names start with start ("" for all).
func EtcdSnapshots(ctx context.Context, loc *location.Location, start string, hooks Hooks) ([]*workflows.EtcdSnapshotMetadata, error) {
	names, err := loc.DirsStartingWith(ctx, location.EtcdSnapshotsPrefix(), start)
	if err != nil {
		return nil, err
	}
	var out []*workflows.EtcdSnapshotMetadata
	for i, name := range names {
		hooks.progress(i)
		meta, err := ReadEtcdSnapshot(ctx, loc, name)
		switch {
		case err == nil:
			out = append(out, meta)
		case errors.Is(err, location.ErrNotFound):
			// running, or discarded and half-gone
		default:
			hooks.unreadable(name, err)
		}
	}
	return out, nil
}

// EtcdScheduleRuns returns the committed etcd snapshots a schedule took.
// Failed runs leave nothing in the location (their partial snapshot is
// discarded), so retention sees only completed ones.
func EtcdScheduleRuns(ctx context.Context, loc *location.Location, schedule string, hooks Hooks) ([]workflows.ScheduleRun, error) {
	snaps, err := EtcdSnapshots(ctx, loc, schedule+"-", hooks)
	if err != nil {
		return nil, err
	}
	runs := []workflows.ScheduleRun{}
	for _, m := range snaps {
		if _, ok := workflows.ScheduledRunTime(schedule, m.Name); !ok || m.Spec.Schedule != schedule {
			continue
		}
		run := workflows.ScheduleRun{Name: m.Name, Phase: m.Status.Phase, Bytes: m.Status.Bytes}
		if m.Status.CompletionTime != nil {
			run.Time = *m.Status.CompletionTime
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// RunsOf returns the finished runs of a schedule, of whichever kind it takes.
func RunsOf(ctx context.Context, loc *location.Location, spec workflows.ScheduleSpec, hooks Hooks) ([]workflows.ScheduleRun, error) {
	if spec.RunKind() == workflows.KindEtcdSnapshot {
		return EtcdScheduleRuns(ctx, loc, spec.Name, hooks)
	}
	return ScheduleRuns(ctx, loc, spec.Name, hooks)
}
