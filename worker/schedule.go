package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/workflows"
)

// EnsureExpirySchedule creates, or brings up to date, the Temporal
// Schedule that runs ExpireBackupsWorkflow on location every interval.
// Every worker calls it; the schedule exists once per namespace.
func EnsureExpirySchedule(ctx context.Context, c client.Client, location string, interval time.Duration) error {
	return ensureIntervalSchedule(ctx, c, workflows.ExpireScheduleID, interval, &client.ScheduleWorkflowAction{
		ID:        "expire-backups",
		Workflow:  workflows.ExpireBackupsWorkflowName,
		Args:      []any{workflows.ExpireBackupsRequest{Location: location}},
		TaskQueue: workflows.TaskQueue,
	})
}

// EnsureMaintenanceSchedule creates, or brings up to date, the Temporal
// Schedule that runs kopia maintenance on location's repository every
// interval: one schedule, one run at a time, so one maintainer.
func EnsureMaintenanceSchedule(ctx context.Context, c client.Client, location string, interval time.Duration) error {
	return ensureIntervalSchedule(ctx, c, workflows.MaintenanceScheduleID, interval, &client.ScheduleWorkflowAction{
		ID:        "repository-maintenance",
		Workflow:  workflows.RepositoryMaintenanceWorkflowName,
		Args:      []any{workflows.MaintenanceRequest{Location: location, Mode: "auto"}},
		TaskQueue: workflows.TaskQueue,
	})
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
