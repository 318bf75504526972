package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ScheduledBackupRequest is the argument a schedule starts each run with.
type ScheduledBackupRequest struct {
	Schedule ScheduleSpec `json:"schedule"`
}

// ScheduleRunsInput asks for the finished runs of a schedule.
type ScheduleRunsInput struct {
	Schedule ScheduleSpec `json:"schedule"`
}

// ScheduleRunsResult lists a schedule's finished runs, and the interval
// its spec gives at the time of listing (for the overdue check).
type ScheduleRunsResult struct {
	Runs     []ScheduleRun `json:"runs"`
	Interval time.Duration `json:"interval"`
}

// ScheduledBackupResult is what one scheduled run did.
type ScheduledBackupResult struct {
	Schedule      string         `json:"schedule"`
	Backup        string         `json:"backup"`
	Phase         Phase          `json:"phase"`
	FailureReason string         `json:"failureReason,omitempty"`
	Deleted       []string       `json:"deleted"`
	DeleteFailed  []string       `json:"deleteFailed,omitempty"`
	Health        ScheduleHealth `json:"health"`
}

// scheduledStartTime is the search attribute Temporal sets on the
// workflows a schedule starts: the time the run was due.
var scheduledStartTime = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// ScheduledBackupWorkflow is one run of a backup schedule. It starts the
// backup <schedule>-<due time> as a child, watches it against the
// schedule's maxRunDuration, then applies the schedule's retention through
// DeleteBackupWorkflow children and records the schedule's health. The
// schedule's overlap policy applies to this workflow, so it spans the
// whole backup.
func ScheduledBackupWorkflow(ctx workflow.Context, req ScheduledBackupRequest) (*ScheduledBackupResult, error) {
	spec := req.Schedule
	due, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(scheduledStartTime)
	if !ok {
		due = workflow.Now(ctx) // started by hand, not by the schedule
	}
	r := &scheduledRun{
		spec: spec,
		res:  ScheduledBackupResult{Schedule: spec.Name, Backup: ScheduledBackupName(spec.Name, due), Phase: PhaseNew},
	}
	r.logger = log.With(workflow.GetLogger(ctx), "schedule", spec.Name, "backup", r.res.Backup)
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*ScheduledBackupResult, error) { return &r.res, nil }); err != nil {
		return nil, fmt.Errorf("register status query: %w", err)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttrKind.ValueSet(KindScheduledRun), SearchAttrName.ValueSet(r.res.Backup),
		SearchAttrSchedule.ValueSet(spec.Name), SearchAttrPhase.ValueSet(string(PhaseInProgress)),
		SearchAttrHealth.ValueSet(HealthHealthy),
	); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	r.updateDetails(ctx)

	backupErr := r.backup(ctx)
	if errors.Is(ctx.Err(), workflow.ErrCanceled) {
		r.res.Phase = PhaseCanceled
		publishPhase(ctx, r.logger, PhaseCanceled)
		return &r.res, temporal.NewCanceledError("scheduled backup canceled")
	}
	if err := r.retain(ctx); err != nil {
		r.logger.Error("Retention failed", "error", err)
		return &r.res, err
	}
	publishPhase(ctx, r.logger, r.res.Phase)
	r.updateDetails(ctx)
	if backupErr != nil {
		return &r.res, backupErr
	}
	return &r.res, nil
}

type scheduledRun struct {
	spec    ScheduleSpec
	logger  log.Logger
	res     ScheduledBackupResult
	tooLong string
}

// backup runs the child backup to its end, marking the run Degraded if it
// outlasts maxRunDuration.
func (r *scheduledRun) backup(ctx workflow.Context) error {
	child := r.startChild(ctx)
	r.res.Phase = PhaseInProgress
	r.logger.Info("Scheduled backup started")

	var status struct {
		Phase Phase `json:"phase"`
	}
	var backupErr error
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(child, func(f workflow.Future) {
		backupErr = f.Get(ctx, &status)
		done = true
	})
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	if r.spec.MaxRunDuration != nil {
		limit := r.spec.MaxRunDuration.Duration
		sel.AddFuture(workflow.NewTimer(timerCtx, limit), func(f workflow.Future) {
			if f.Get(ctx, nil) != nil {
				return // stopped: the backup ended first
			}
			r.tooLong = fmt.Sprintf("%s %s has run for more than maxRunDuration %s", r.spec.RunKind(), r.res.Backup, limit)
			r.setHealth(ctx, ScheduleHealth{State: HealthDegraded, Reasons: []string{r.tooLong}})
		})
	}
	for !done {
		sel.Select(ctx)
	}
	switch {
	case backupErr == nil:
		r.res.Phase = status.Phase
	case temporal.IsCanceledError(backupErr):
		r.res.Phase = PhaseCanceled
		r.res.FailureReason = "canceled"
	default:
		r.res.Phase = PhaseFailed
		r.res.FailureReason = reason(backupErr)
		if temporal.IsWorkflowExecutionAlreadyStartedError(backupErr) {
			r.res.FailureReason = fmt.Sprintf("a run called %s already ran; two runs were due in the same second", r.res.Backup)
		}
	}
	r.logger.Info("Scheduled backup ended", "phase", r.res.Phase, "reason", r.res.FailureReason)
	return backupErr
}

// startChild starts the run's backup or etcd snapshot as a child
// workflow named after the run.
func (r *scheduledRun) startChild(ctx workflow.Context) workflow.ChildWorkflowFuture {
	opts := workflow.ChildWorkflowOptions{
		TaskQueue:             TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Ending this run (terminated by hand) cancels the child cleanly
		// rather than killing it mid-write.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
	}
	name := r.res.Backup
	if r.spec.RunKind() == KindEtcdSnapshot {
		spec := EtcdSnapshotSpec{Name: name, StorageLocation: r.spec.Template.StorageLocation, TTL: r.spec.Template.TTL, Schedule: r.spec.Name}
		opts.WorkflowID = EtcdSnapshotWorkflowID(name)
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			SearchAttrKind.ValueSet(KindEtcdSnapshot), SearchAttrName.ValueSet(name),
			SearchAttrPhase.ValueSet(string(PhaseNew)), SearchAttrSchedule.ValueSet(r.spec.Name))
		return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), EtcdSnapshotWorkflowName, EtcdSnapshotRequest{Spec: spec})
	}
	spec := r.spec.Template
	spec.Name = name
	spec.Schedule = r.spec.Name
	opts.WorkflowID = BackupWorkflowID(name)
	opts.Memo = map[string]any{MemoSpecHash: spec.Hash(), MemoLocation: spec.StorageLocation}
	opts.TypedSearchAttributes = temporal.NewSearchAttributes(
		SearchAttrKind.ValueSet(KindBackup), SearchAttrName.ValueSet(name),
		SearchAttrPhase.ValueSet(string(PhaseNew)), SearchAttrSchedule.ValueSet(r.spec.Name))
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), BackupWorkflowName, BackupRequest{Spec: spec, Options: r.spec.BackupOptions})
}

// retain deletes the runs the schedule's retention no longer keeps and
// records the schedule's health. It runs after failed backups too: their
// logs count against keepFailed.
func (r *scheduledRun) retain(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, activityOptions(10*time.Minute, defaultHeartbeatTimeout))
	var listed ScheduleRunsResult
	if err := workflow.ExecuteActivity(actx, ListScheduleRunsActivity, ScheduleRunsInput{Schedule: r.spec}).Get(ctx, &listed); err != nil {
		return fmt.Errorf("list runs of schedule %s: %w", r.spec.Name, err)
	}
	now := workflow.Now(ctx)
	dec := DecideRetention(listed.Runs, r.spec.Retention, now)
	if len(dec.Delete) > 0 {
		r.logger.Info("Retention deletes older runs", "count", len(dec.Delete), "backups", dec.Delete, "protected", dec.Protected)
	}
	r.res.Deleted, r.res.DeleteFailed = deleteBackups(ctx, r.spec.RunKind(), dec.Delete, r.spec.Template.StorageLocation, "retention")

	in := ScheduleHealthInput{Now: now, Interval: listed.Interval, LastSuccess: LastCompleted(listed.Runs)}
	if r.spec.MaxRunDuration != nil {
		in.MaxRunDuration = r.spec.MaxRunDuration.Duration
	}
	health := EvaluateScheduleHealth(in)
	if r.tooLong != "" {
		health.State = HealthDegraded
		health.Reasons = append([]string{r.tooLong}, health.Reasons...)
	}
	r.setHealth(ctx, health)
	if len(r.res.DeleteFailed) > 0 {
		return temporal.NewApplicationError("retention could not delete: "+strings.Join(r.res.DeleteFailed, "; "), "RetentionIncomplete")
	}
	return nil
}

func (r *scheduledRun) setHealth(ctx workflow.Context, h ScheduleHealth) {
	r.res.Health = h
	if h.State == HealthDegraded {
		r.logger.Warn("Schedule degraded", "reasons", h.Reasons)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrHealth.ValueSet(h.State)); err != nil {
		r.logger.Warn("Upsert search attributes failed", "error", err)
	}
	r.updateDetails(ctx)
}

// updateDetails is the Temporal UI's one-glance view of the run.
func (r *scheduledRun) updateDetails(ctx workflow.Context) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "**%s** scheduled backup `%s` of schedule `%s`\n\n", r.res.Phase, r.res.Backup, r.res.Schedule)
	fmt.Fprintf(&sb, "- schedule health: %s\n", cmp.Or(r.res.Health.State, HealthHealthy))
	for _, reason := range r.res.Health.Reasons {
		fmt.Fprintf(&sb, "  - %s\n", reason)
	}
	if r.res.FailureReason != "" {
		fmt.Fprintf(&sb, "- reason: %s\n", r.res.FailureReason)
	}
	if len(r.res.Deleted) > 0 {
		fmt.Fprintf(&sb, "- retention deleted: %s\n", strings.Join(r.res.Deleted, ", "))
	}
	workflow.SetCurrentDetails(ctx, sb.String())
}

// LastCompleted is when the newest Completed run of runs ended; nil when
// none completed.
func LastCompleted(runs []ScheduleRun) *time.Time {
	var last *time.Time
	for _, r := range runs {
		if r.Phase == PhaseCompleted && (last == nil || r.Time.After(*last)) {
			t := r.Time
			last = &t
		}
	}
	return last
}
