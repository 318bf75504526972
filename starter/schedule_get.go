package starter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
)

// ScheduleView is everything cairn knows of one backup schedule: its spec,
// Temporal's record of its actions, its runs in the location, and its
// health judged now.
type ScheduleView struct {
	Name      string                  `json:"name"`
	Spec      v1alpha1.ScheduleSpec   `json:"spec"`
	Paused    bool                    `json:"paused"`
	Note      string                  `json:"note,omitempty"`
	CreatedAt time.Time               `json:"createdAt"`
	Health    v1alpha1.ScheduleHealth `json:"health"`
	// NextRuns are the next due times (before jitter).
	NextRuns []time.Time `json:"nextRuns,omitempty"`
	// Running are the runs not ended yet, with their backup names.
	Running []v1alpha1.RunningRun `json:"running,omitempty"`
	// LastSuccess is when the newest completed backup ended.
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	// Backups are the schedule's finished runs in the location, newest first.
	Backups []v1alpha1.ScheduleRun `json:"backups"`
	// Actions counts what Temporal did at due times.
	Actions ScheduleActions `json:"actions"`
	UIURL   string          `json:"uiUrl,omitempty"`
}

// ScheduleActions counts a schedule's due times by outcome.
type ScheduleActions struct {
	Started        int `json:"started"`
	SkippedOverlap int `json:"skippedOverlap"`
	MissedCatchup  int `json:"missedCatchupWindow"`
}

// ScheduleList is the answer of ListSchedules.
type ScheduleList struct {
	Items []*ScheduleView `json:"items"`
}

// GetSchedule describes the schedule called name.
func (c *Client) GetSchedule(ctx context.Context, name string) (*ScheduleView, error) {
	desc, err := c.temporal.ScheduleClient().GetHandle(ctx, v1alpha1.ScheduleID(name)).Describe(ctx)
	if err != nil {
		return nil, scheduleError(name, err)
	}
	spec, err := specOfSchedule(desc)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", name, err)
	}
	v := &ScheduleView{
		Name: name, Spec: spec, CreatedAt: desc.Info.CreatedAt, NextRuns: desc.Info.NextActionTimes,
		Actions: ScheduleActions{
			Started: desc.Info.NumActions, SkippedOverlap: desc.Info.NumActionsSkippedOverlap,
			MissedCatchup: desc.Info.NumActionsMissedCatchupWindow,
		},
		UIURL: c.ScheduleURL(name),
	}
	if st := desc.Schedule.State; st != nil {
		v.Paused, v.Note = st.Paused, st.Note
	}
	if len(v.NextRuns) > 3 {
		v.NextRuns = v.NextRuns[:3]
	}
	for _, run := range desc.Info.RunningWorkflows {
		if r, ok := c.runningRun(ctx, run.WorkflowID); ok {
			v.Running = append(v.Running, r)
		}
	}
	if err := c.addScheduleBackups(ctx, v); err != nil {
		return nil, err
	}
	in := v1alpha1.ScheduleHealthInput{
		Now: time.Now(), Paused: v.Paused, Interval: spec.Interval(time.Now()),
		Created: v.CreatedAt, LastSuccess: v.LastSuccess, Running: v.Running,
	}
	if spec.MaxRunDuration != nil {
		in.MaxRunDuration = spec.MaxRunDuration.Duration
	}
	v.Health = v1alpha1.EvaluateScheduleHealth(in)
	return v, nil
}

// ListSchedules describes every backup schedule, by name.
func (c *Client) ListSchedules(ctx context.Context) (*ScheduleList, error) {
	it, err := c.temporal.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	var names []string
	for it.HasNext() {
		entry, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		if name, ok := v1alpha1.ScheduleNameOf(entry.ID); ok && inNamespace(ctx, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	list := &ScheduleList{Items: []*ScheduleView{}}
	for _, name := range names {
		v, err := c.GetSchedule(ctx, name)
		if errors.Is(err, ErrNotFound) {
			// Listed, but deleted since: Temporal's list of schedules is
			// eventually consistent, and lags most after a restart.
			continue
		}
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, v)
	}
	return list, nil
}

// specOfSchedule decodes the cairn spec a schedule's action carries.
func specOfSchedule(desc *client.ScheduleDescription) (v1alpha1.ScheduleSpec, error) {
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(action.Args) != 1 {
		return v1alpha1.ScheduleSpec{}, fmt.Errorf("not a cairn backup schedule")
	}
	payload, ok := action.Args[0].(*commonpb.Payload)
	if !ok {
		return v1alpha1.ScheduleSpec{}, fmt.Errorf("unexpected action argument %T", action.Args[0])
	}
	var req v1alpha1.ScheduledBackupRequest
	if err := converter.GetDefaultDataConverter().FromPayload(payload, &req); err != nil {
		return v1alpha1.ScheduleSpec{}, fmt.Errorf("decode action argument: %w", err)
	}
	return req.Schedule, nil
}

// runningRun names the backup of a running scheduled run and says when
// it started.
func (c *Client) runningRun(ctx context.Context, workflowID string) (v1alpha1.RunningRun, bool) {
	desc, err := c.temporal.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return v1alpha1.RunningRun{}, false // ended meanwhile
	}
	info := desc.GetWorkflowExecutionInfo()
	return v1alpha1.RunningRun{
		Name:  cmp.Or(keywordAttr(info, v1alpha1.SearchAttrName.GetName()), workflowID),
		Start: info.GetStartTime().AsTime(),
	}, true
}

// addScheduleBackups lists the schedule's finished runs in its location.
func (c *Client) addScheduleBackups(ctx context.Context, v *ScheduleView) error {
	loc, err := c.opts.Opener.Open(ctx, v.Spec.Template.StorageLocation)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", v.Name, err)
	}
	defer loc.Close()
	runs, err := backupmeta.RunsOf(ctx, loc, v.Spec, backupmeta.Hooks{})
	if err != nil {
		return fmt.Errorf("runs of schedule %s: %w", v.Name, err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Time.After(runs[j].Time) })
	v.Backups = runs
	v.LastSuccess = v1alpha1.LastCompleted(runs)
	return nil
}
