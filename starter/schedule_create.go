package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// CreateSchedule validates spec and creates its Temporal Schedule. A
// schedule of that name already existing is a ConflictError; nothing is
// created when anything is wrong.
func (c *Client) CreateSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (*CreateResult, error) {
	spec, err := c.prepareSchedule(ctx, spec)
	if err != nil {
		return nil, err
	}
	opts := scheduleOptions(spec)
	_, err = c.temporal.ScheduleClient().Create(ctx, opts)
	var exists *serviceerror.AlreadyExists
	switch {
	case errors.Is(err, temporal.ErrScheduleAlreadyRunning) || errors.As(err, &exists):
		return nil, &ConflictError{Message: fmt.Sprintf("schedule %q already exists; change it with 'cairn schedule update' or delete it first", spec.Name)}
	case err != nil:
		return nil, scheduleError(spec.Name, err)
	}
	return &CreateResult{Name: spec.Name, WorkflowID: opts.ID, Created: true, UIURL: c.ScheduleURL(spec.Name)}, nil
}

// prepareSchedule fills defaults and checks the schedule and its backup
// template the way a backup's spec is checked before it starts.
func (c *Client) prepareSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (v1alpha1.ScheduleSpec, error) {
	spec = spec.WithDefaults(c.opts.DefaultLocation)
	// Every run of the schedule acts as whoever created or last updated
	// it, authorized afresh by the cluster at each run.
	spec.BackupOptions.ActingAs = ActingAs(ctx)
	var problems []string
	if err := spec.Validate(); err != nil {
		var invalid *v1alpha1.InvalidSpecError
		if !errors.As(err, &invalid) {
			return spec, err
		}
		problems = invalid.Problems
	}
	ns := NamespaceOf(ctx)
	problems = append(problems, namespaceScopeProblems(ns, spec.Name, spec.Template.IncludedNamespaces, spec.Template.ClusterResources)...)
	if ns != "" && spec.RunKind() != v1alpha1.KindBackup {
		problems = append(problems, fmt.Sprintf("kind %q: a schedule of namespace %s backs it up", spec.Kind, ns))
	}
	if len(problems) > 0 {
		return spec, &InvalidError{Problems: problems}
	}
	if spec.RunKind() == v1alpha1.KindEtcdSnapshot {
		return c.prepareEtcdSchedule(ctx, spec)
	}
	template := spec.Template
	template.Name = v1alpha1.ScheduledBackupName(spec.Name, time.Now())
	template, err := c.prepareSpec(ctx, template, nil)
	if err != nil {
		return spec, templateProblems(err)
	}
	template.Name = ""
	spec.Template = template
	if problems := retentionLockProblems(spec, c.opts.Opener.Lock(template.StorageLocation), time.Now()); len(problems) > 0 {
		return spec, &InvalidError{Problems: problems}
	}
	return spec, nil
}

// templateProblems marks the problems of an InvalidError as the
// template's.
func templateProblems(err error) error {
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		for i, p := range invalid.Problems {
			invalid.Problems[i] = "template: " + p
		}
	}
	return err
}

// prepareEtcdSchedule checks the location of a schedule of etcd
// snapshots; the backup filters of its template do not apply.
func (c *Client) prepareEtcdSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (v1alpha1.ScheduleSpec, error) {
	normalized, err := c.resolveLocation(spec.Template.StorageLocation, true)
	if err != nil {
		return spec, &InvalidError{Problems: []string{"template: " + err.Error()}}
	}
	spec.Template.StorageLocation = normalized
	return spec, templateProblems(c.checkWritable(ctx, normalized))
}

// scheduleOptions turns a cairn schedule into a Temporal Schedule whose
// action starts ScheduledBackupWorkflow with the whole spec.
func scheduleOptions(spec v1alpha1.ScheduleSpec) client.ScheduleOptions {
	return client.ScheduleOptions{
		ID:            v1alpha1.ScheduleID(spec.Name),
		Spec:          temporalSpec(spec),
		Action:        scheduleAction(spec),
		Overlap:       overlapPolicy(spec.Overlap),
		CatchupWindow: spec.CatchupWindow.Duration,
		Paused:        spec.Paused,
		Note:          "created by cairn",
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindSchedule),
			v1alpha1.SearchAttrName.ValueSet(spec.Name),
		),
	}
}

func temporalSpec(spec v1alpha1.ScheduleSpec) client.ScheduleSpec {
	var s client.ScheduleSpec
	if spec.Every != nil {
		s.Intervals = []client.ScheduleIntervalSpec{{Every: spec.Every.Duration}}
	} else {
		s.CronExpressions = []string{spec.Cron}
		s.TimeZoneName = spec.TimeZone
	}
	if spec.Jitter != nil {
		s.Jitter = spec.Jitter.Duration
	}
	return s
}

func scheduleAction(spec v1alpha1.ScheduleSpec) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:        v1alpha1.ScheduledRunWorkflowID(spec.Name),
		Workflow:  v1alpha1.ScheduledBackupWorkflowName,
		Args:      []any{v1alpha1.ScheduledBackupRequest{Schedule: spec}},
		TaskQueue: v1alpha1.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindScheduledRun),
			v1alpha1.SearchAttrSchedule.ValueSet(spec.Name),
		),
	}
}

func overlapPolicy(p v1alpha1.OverlapPolicy) enumspb.ScheduleOverlapPolicy {
	switch p {
	case v1alpha1.OverlapBufferOne:
		return enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
	case v1alpha1.OverlapAllowAll:
		return enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
	}
	return enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
}

// scheduleError maps Temporal's answers about a schedule to this
// package's errors: what Temporal refuses as invalid is the user's to fix.
func scheduleError(name string, err error) error {
	var invalid *serviceerror.InvalidArgument
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &invalid):
		return &InvalidError{Problems: []string{invalid.Message}}
	case errors.As(err, &notFound):
		return fmt.Errorf("schedule %q: %w", name, ErrNotFound)
	}
	return fmt.Errorf("schedule %s: %w", name, err)
}
