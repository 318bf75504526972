package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
)

// UpdateSchedule replaces the spec of an existing schedule; runs already
// going keep the spec they started with. Pausing is left to
// PauseSchedule and UnpauseSchedule, so spec.Paused is ignored here.
func (c *Client) UpdateSchedule(ctx context.Context, name string, spec v1alpha1.ScheduleSpec) (*ScheduleView, error) {
	if spec.Name == "" {
		spec.Name = name
	}
	if spec.Name != name {
		return nil, &InvalidError{Problems: []string{fmt.Sprintf("name %q in the body differs from %q in the path; a schedule cannot be renamed", spec.Name, name)}}
	}
	spec, err := c.prepareSchedule(ctx, spec)
	if err != nil {
		return nil, err
	}
	opts := scheduleOptions(spec)
	h := c.temporal.ScheduleClient().GetHandle(ctx, opts.ID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec = &opts.Spec
		s.Action = opts.Action
		if s.Policy == nil {
			s.Policy = &client.SchedulePolicies{}
		}
		s.Policy.Overlap = opts.Overlap
		s.Policy.CatchupWindow = opts.CatchupWindow
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if err != nil {
		return nil, scheduleError(name, err)
	}
	return c.GetSchedule(ctx, name)
}

// PauseSchedule stops a schedule from starting runs; a run already going
// goes on.
func (c *Client) PauseSchedule(ctx context.Context, name, note string) (*ScheduleView, error) {
	if note == "" {
		note = "paused with cairn"
	}
	if err := c.temporal.ScheduleClient().GetHandle(ctx, v1alpha1.ScheduleID(name)).Pause(ctx, client.SchedulePauseOptions{Note: note}); err != nil {
		return nil, scheduleError(name, err)
	}
	return c.GetSchedule(ctx, name)
}

// UnpauseSchedule lets a paused schedule start runs again from its next
// due time; what it missed meanwhile is not caught up.
func (c *Client) UnpauseSchedule(ctx context.Context, name, note string) (*ScheduleView, error) {
	if note == "" {
		note = "unpaused with cairn"
	}
	if err := c.temporal.ScheduleClient().GetHandle(ctx, v1alpha1.ScheduleID(name)).Unpause(ctx, client.ScheduleUnpauseOptions{Note: note}); err != nil {
		return nil, scheduleError(name, err)
	}
	return c.GetSchedule(ctx, name)
}

// DeleteSchedule deletes a schedule. Its backups stay, and expire by
// their TTL; a run already going goes on.
func (c *Client) DeleteSchedule(ctx context.Context, name string) (*ScheduleDeleted, error) {
	if err := c.temporal.ScheduleClient().GetHandle(ctx, v1alpha1.ScheduleID(name)).Delete(ctx); err != nil {
		return nil, scheduleError(name, err)
	}
	return &ScheduleDeleted{Name: name, Deleted: true}, nil
}

// ScheduleDeleted answers DeleteSchedule.
type ScheduleDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

// TriggerResult says what a trigger started.
type TriggerResult struct {
	Schedule string `json:"schedule"`
	// Backup is the run's backup, when it started within the wait.
	Backup     string `json:"backup,omitempty"`
	WorkflowID string `json:"workflowId,omitempty"`
	UIURL      string `json:"uiUrl,omitempty"`
}

// triggerWait bounds how long TriggerSchedule watches for the run it asked for.
const triggerWait = 10 * time.Second

// TriggerSchedule starts a run of the schedule now, under its overlap
// policy. With policy skip and a run still going, nothing starts and the
// answer is a ConflictError, so a caller is never told of a run that did
// not happen.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (*TriggerResult, error) {
	h := c.temporal.ScheduleClient().GetHandle(ctx, v1alpha1.ScheduleID(name))
	before, err := h.Describe(ctx)
	if err != nil {
		return nil, scheduleError(name, err)
	}
	// Runs are named by the second they are due in: a trigger in the
	// second of the previous run waits for the next one.
	if n := len(before.Info.RecentActions); n > 0 {
		last := before.Info.RecentActions[n-1].ScheduleTime.Truncate(time.Second)
		if err := clock.Sleep(ctx, time.Until(last.Add(time.Second))); err != nil {
			return nil, err
		}
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		return nil, scheduleError(name, err)
	}
	res := &TriggerResult{Schedule: name}
	deadline := time.Now().Add(triggerWait)
	for time.Now().Before(deadline) {
		after, err := h.Describe(ctx)
		if err != nil {
			return nil, scheduleError(name, err)
		}
		switch {
		case after.Info.NumActions > before.Info.NumActions:
			if n := len(after.Info.RecentActions); n > 0 && after.Info.RecentActions[n-1].StartWorkflowResult != nil {
				res.WorkflowID = after.Info.RecentActions[n-1].StartWorkflowResult.WorkflowID
				res.Backup = v1alpha1.ScheduledBackupName(name, after.Info.RecentActions[n-1].ScheduleTime)
				res.UIURL = c.RunURL(res.WorkflowID, "")
			}
			return res, nil
		case after.Info.NumActionsSkippedOverlap > before.Info.NumActionsSkippedOverlap:
			return nil, &ConflictError{Message: fmt.Sprintf("schedule %q has a run still going and its overlap policy is skip: nothing started", name)}
		}
		if err := clock.Sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}
	return res, nil // requested; Temporal has not reported the start yet
}
