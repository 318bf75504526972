package backupmeta

import (
	"context"
	"errors"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// ReadEtcdSnapshot returns the committed snapshot.json of the etcd
// snapshot called name; an error wrapping location.ErrNotFound when there
// is none.
func ReadEtcdSnapshot(ctx context.Context, loc *location.Location, name string) (*v1alpha1.EtcdSnapshotMetadata, error) {
	var meta v1alpha1.EtcdSnapshotMetadata
	if err := loc.ReadJSON(ctx, location.EtcdSnapshot(name).Metadata(), &meta); err != nil {
		return nil, err
	}
	return &meta, nil
}

// EtcdSnapshots returns the committed etcd snapshots of a location whose
// names start with start ("" for all).
func EtcdSnapshots(ctx context.Context, loc *location.Location, start string, hooks Hooks) ([]*v1alpha1.EtcdSnapshotMetadata, error) {
	names, err := loc.DirsStartingWith(ctx, location.EtcdSnapshotsPrefix(), start)
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.EtcdSnapshotMetadata
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
func EtcdScheduleRuns(ctx context.Context, loc *location.Location, schedule string, hooks Hooks) ([]v1alpha1.ScheduleRun, error) {
	snaps, err := EtcdSnapshots(ctx, loc, schedule+"-", hooks)
	if err != nil {
		return nil, err
	}
	runs := []v1alpha1.ScheduleRun{}
	for _, m := range snaps {
		if _, ok := v1alpha1.ScheduledRunTime(schedule, m.Name); !ok || m.Spec.Schedule != schedule {
			continue
		}
		run := v1alpha1.ScheduleRun{Name: m.Name, Phase: m.Status.Phase, Bytes: m.Status.Bytes}
		if m.Status.CompletionTime != nil {
			run.Time = *m.Status.CompletionTime
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// RunsOf returns the finished runs of a schedule, of whichever kind it takes.
func RunsOf(ctx context.Context, loc *location.Location, spec v1alpha1.ScheduleSpec, hooks Hooks) ([]v1alpha1.ScheduleRun, error) {
	if spec.RunKind() == v1alpha1.KindEtcdSnapshot {
		return EtcdScheduleRuns(ctx, loc, spec.Name, hooks)
	}
	return ScheduleRuns(ctx, loc, spec.Name, hooks)
}
