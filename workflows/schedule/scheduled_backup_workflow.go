package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// scheduledStartTime is the search attribute Temporal sets on the
// workflows a schedule starts: the time the run was due.
var scheduledStartTime = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// ScheduledBackupWorkflow is one run of a backup schedule. It starts the
// backup <schedule>-<due time> as a child, watches it against the
// schedule's maxRunDuration, then applies the schedule's retention through
// DeleteBackupWorkflow children and records the schedule's health. The
// schedule's overlap policy applies to this workflow, so it spans the
// whole backup.
func ScheduledBackupWorkflow(ctx workflow.Context, req v1alpha1.ScheduledBackupRequest) (*v1alpha1.ScheduledBackupResult, error) {
	spec := req.Schedule
	due, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(scheduledStartTime)
	if !ok {
		due = workflow.Now(ctx) // started by hand, not by the schedule
	}
	r := &scheduledRun{
		spec: spec,
		res:  v1alpha1.ScheduledBackupResult{Schedule: spec.Name, Backup: v1alpha1.ScheduledBackupName(spec.Name, due), Phase: v1alpha1.PhaseNew},
	}
	r.logger = log.With(workflow.GetLogger(ctx), "schedule", spec.Name, "backup", r.res.Backup)
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.ScheduledBackupResult, error) { return &r.res, nil }); err != nil {
		return nil, fmt.Errorf("register status query: %w", err)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindScheduledRun), v1alpha1.SearchAttrName.ValueSet(r.res.Backup),
		v1alpha1.SearchAttrSchedule.ValueSet(spec.Name), v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseInProgress)),
		v1alpha1.SearchAttrHealth.ValueSet(v1alpha1.HealthHealthy),
	); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	r.updateDetails(ctx)

	backupErr := r.backup(ctx)
	if errors.Is(ctx.Err(), workflow.ErrCanceled) {
		r.res.Phase = v1alpha1.PhaseCanceled
		flow.PublishPhase(ctx, r.logger, v1alpha1.PhaseCanceled)
		return &r.res, temporal.NewCanceledError("scheduled backup canceled")
	}
	if err := r.retain(ctx); err != nil {
		r.logger.Error("Retention failed", "error", err)
		return &r.res, err
	}
	flow.PublishPhase(ctx, r.logger, r.res.Phase)
	r.updateDetails(ctx)
	if backupErr != nil {
		return &r.res, backupErr
	}
	return &r.res, nil
}

type scheduledRun struct {
	spec    v1alpha1.ScheduleSpec
	logger  log.Logger
	res     v1alpha1.ScheduledBackupResult
	tooLong string
}

// backup runs the child backup to its end, marking the run Degraded if it
// outlasts maxRunDuration.
func (r *scheduledRun) backup(ctx workflow.Context) error {
	child := r.startChild(ctx)
	r.res.Phase = v1alpha1.PhaseInProgress
	r.logger.Info("Scheduled backup started")

	var status struct {
		Phase v1alpha1.Phase `json:"phase"`
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
			r.setHealth(ctx, v1alpha1.ScheduleHealth{State: v1alpha1.HealthDegraded, Reasons: []string{r.tooLong}})
		})
	}
	for !done {
		sel.Select(ctx)
	}
	switch {
	case backupErr == nil:
		r.res.Phase = status.Phase
	case temporal.IsCanceledError(backupErr):
		r.res.Phase = v1alpha1.PhaseCanceled
		r.res.FailureReason = "canceled"
	default:
		r.res.Phase = v1alpha1.PhaseFailed
		r.res.FailureReason = flow.Reason(backupErr)
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
		TaskQueue:             v1alpha1.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Ending this run (terminated by hand) cancels the child cleanly
		// rather than killing it mid-write.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
	}
	name := r.res.Backup
	if r.spec.RunKind() == v1alpha1.KindEtcdSnapshot {
		spec := v1alpha1.EtcdSnapshotSpec{Name: name, StorageLocation: r.spec.Template.StorageLocation, TTL: r.spec.Template.TTL, Schedule: r.spec.Name}
		opts.WorkflowID = v1alpha1.EtcdSnapshotWorkflowID(name)
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindEtcdSnapshot), v1alpha1.SearchAttrName.ValueSet(name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)), v1alpha1.SearchAttrSchedule.ValueSet(r.spec.Name))
		return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), v1alpha1.EtcdSnapshotWorkflowName, v1alpha1.EtcdSnapshotRequest{Spec: spec})
	}
	spec := r.spec.Template
	spec.Name = name
	spec.Schedule = r.spec.Name
	opts.WorkflowID = v1alpha1.BackupWorkflowID(name)
	opts.Memo = map[string]any{v1alpha1.MemoSpecHash: spec.Hash(), v1alpha1.MemoLocation: spec.StorageLocation}
	actingAs := r.spec.BackupOptions.ActingAs
	if actingAs != nil {
		opts.Memo[v1alpha1.MemoActingAs] = actingAs
	}
	opts.TypedSearchAttributes = temporal.NewSearchAttributes(
		v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindBackup), v1alpha1.SearchAttrName.ValueSet(name),
		v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)), v1alpha1.SearchAttrSchedule.ValueSet(r.spec.Name),
		v1alpha1.SearchAttrActingAs.ValueSet(actingAs.UsernameOrWorker()))
	return workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), v1alpha1.BackupWorkflowName, v1alpha1.BackupRequest{Spec: spec, Options: r.spec.BackupOptions})
}

// retain deletes the runs the schedule's retention no longer keeps, in
// an ApplyRetention child that pages through them, and records the
// schedule's health. It runs after failed backups too: their logs count
// against keepFailed.
func (r *scheduledRun) retain(ctx workflow.Context) error {
	now := workflow.Now(ctx)
	var res v1alpha1.RetentionResult
	req := v1alpha1.RetentionRequest{Schedule: r.spec, Now: now}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: v1alpha1.RetentionWorkflowID(r.res.Backup)})
	if err := workflow.ExecuteChildWorkflow(cctx, v1alpha1.ApplyRetentionWorkflowName, req).Get(ctx, &res); err != nil {
		return fmt.Errorf("apply the retention of schedule %s: %w", r.spec.Name, err)
	}
	r.res.Deleted, r.res.DeletedTotal, r.res.DeleteFailed = res.Deleted, res.DeletedTotal, res.DeleteFailed
	in := v1alpha1.ScheduleHealthInput{Now: now, Interval: res.Interval, LastSuccess: res.LastSuccess}
	if r.spec.MaxRunDuration != nil {
		in.MaxRunDuration = r.spec.MaxRunDuration.Duration
	}
	health := v1alpha1.EvaluateScheduleHealth(in)
	if r.tooLong != "" {
		health.State = v1alpha1.HealthDegraded
		health.Reasons = append([]string{r.tooLong}, health.Reasons...)
	}
	r.setHealth(ctx, health)
	if len(r.res.DeleteFailed) > 0 {
		return temporal.NewApplicationError("retention could not delete: "+strings.Join(r.res.DeleteFailed, "; "), "RetentionIncomplete")
	}
	return nil
}

func (r *scheduledRun) setHealth(ctx workflow.Context, h v1alpha1.ScheduleHealth) {
	r.res.Health = h
	if h.State == v1alpha1.HealthDegraded {
		r.logger.Warn("Schedule degraded", "reasons", h.Reasons)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrHealth.ValueSet(h.State)); err != nil {
		r.logger.Warn("Upsert search attributes failed", "error", err)
	}
	r.updateDetails(ctx)
}

// updateDetails is the Temporal UI's one-glance view of the run.
func (r *scheduledRun) updateDetails(ctx workflow.Context) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "**%s** scheduled backup `%s` of schedule `%s`\n\n", r.res.Phase, r.res.Backup, r.res.Schedule)
	fmt.Fprintf(&sb, "- schedule health: %s\n", cmp.Or(r.res.Health.State, v1alpha1.HealthHealthy))
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
