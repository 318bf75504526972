package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// EnsureExpirySchedule creates, or brings up to date, the Temporal
// Schedule that runs ExpireBackupsWorkflow on a location every interval.
// Every worker calls it; the schedule exists once per namespace and
// location.
func EnsureExpirySchedule(ctx context.Context, c client.Client, loc location.Entry, interval time.Duration) error {
	return ensureIntervalSchedule(ctx, c, v1alpha1.LocationScheduleID(v1alpha1.ExpireScheduleID, loc.Name), interval, &client.ScheduleWorkflowAction{
		ID:        v1alpha1.LocationScheduleID("expire-backups", loc.Name),
		Workflow:  v1alpha1.ExpireBackupsWorkflowName,
		Args:      []any{v1alpha1.ExpireBackupsRequest{Location: loc.URL}},
		TaskQueue: v1alpha1.TaskQueue,
	})
}

// EnsureMaintenanceSchedule creates, or brings up to date, the Temporal
// Schedule that runs kopia maintenance on a location's repository every
// interval: one schedule per location, one run at a time, so one
// maintainer.
func EnsureMaintenanceSchedule(ctx context.Context, c client.Client, loc location.Entry, interval time.Duration) error {
	return ensureIntervalSchedule(ctx, c, v1alpha1.LocationScheduleID(v1alpha1.MaintenanceScheduleID, loc.Name), interval, &client.ScheduleWorkflowAction{
		ID:        v1alpha1.LocationScheduleID("repository-maintenance", loc.Name),
		Workflow:  v1alpha1.RepositoryMaintenanceWorkflowName,
		Args:      []any{v1alpha1.MaintenanceRequest{Location: loc.URL, Mode: "auto"}},
		TaskQueue: v1alpha1.TaskQueue,
	})
}

// ensureLocationSchedules sets up expiry and maintenance of every
// location the worker writes, read-only ones neither, and deletes those
// of locations it no longer writes.
func ensureLocationSchedules(ctx context.Context, c client.Client, cfg Config) {
	if err := pruneLocationSchedules(ctx, c, cfg); err != nil {
		cfg.Log.Warn("Could not remove the schedules of locations no longer configured", zap.Error(err))
	}
	for _, loc := range cfg.locations() {
		if loc.ReadOnly {
			continue
		}
		log := cfg.Log.With(zap.String("location", loc.Name))
		if cfg.ExpireInterval > 0 {
			if err := EnsureExpirySchedule(ctx, c, loc, cfg.ExpireInterval); err != nil {
				log.Warn("Could not set up the schedule that deletes expired backups", zap.Error(err))
			}
		}
		if cfg.MaintenanceInterval > 0 {
			if err := EnsureMaintenanceSchedule(ctx, c, loc, cfg.MaintenanceInterval); err != nil {
				log.Warn("Could not set up the repository maintenance schedule", zap.Error(err))
			}
		}
	}
}

// pruneLocationSchedules deletes the expiry and maintenance schedules of
// named locations the worker no longer writes: removed from its
// configuration, or made read-only. Left alone, they would go on running
// against a location the operator took away. A kind of schedule the
// worker does not keep (its interval 0) is not touched.
func pruneLocationSchedules(ctx context.Context, c client.Client, cfg Config) error {
	var bases []string
	if cfg.ExpireInterval > 0 {
		bases = append(bases, v1alpha1.ExpireScheduleID)
	}
	if cfg.MaintenanceInterval > 0 {
		bases = append(bases, v1alpha1.MaintenanceScheduleID)
	}
	if len(bases) == 0 {
		return nil
	}
	keep := map[string]bool{}
	for _, loc := range cfg.locations() {
		for _, base := range bases {
			keep[v1alpha1.LocationScheduleID(base, loc.Name)] = !loc.ReadOnly
		}
	}
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	for it.HasNext() {
		entry, err := it.Next()
		if err != nil {
			return fmt.Errorf("list schedules: %w", err)
		}
		for _, base := range bases {
			if !strings.HasPrefix(entry.ID, base+"-") || keep[entry.ID] {
				continue
			}
			err := c.ScheduleClient().GetHandle(ctx, entry.ID).Delete(ctx)
			var notFound *serviceerror.NotFound
			if err != nil && !errors.As(err, &notFound) {
				return fmt.Errorf("delete schedule %s: %w", entry.ID, err)
			}
			cfg.Log.Info("Deleted the schedule of a location no longer written", zap.String("schedule", entry.ID))
		}
	}
	return nil
}

func ensureIntervalSchedule(ctx context.Context, c client.Client, id string, interval time.Duration, action *client.ScheduleWorkflowAction) error {
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:     id,
		Spec:   spec,
		Action: action,
		// A run still going when the next is due is enough.
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	})
	var exists *serviceerror.AlreadyExists
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) && !errors.As(err, &exists) {
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, id)
	return h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		in.Description.Schedule.Spec = &spec
		in.Description.Schedule.Action = action
		return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
	}})
}
