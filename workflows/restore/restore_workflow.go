package restore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

const (
	crdGroupResource    = "customresourcedefinitions.apiextensions.k8s.io"
	claimsGroupResource = "persistentvolumeclaims"
)

// RestoreWorkflow restores a backup into the cluster its worker serves:
// plan (read the backup, choose versions, write prepared items in
// batches), apply each resource type in order (waiting for restored CRDs
// to serve), relink owner references, record the results. Its history
// grows with resource types, never with items.
func RestoreWorkflow(ctx workflow.Context, req v1alpha1.RestoreRequest) (*v1alpha1.RestoreStatus, error) {
	if err := flow.InvalidOptions(req.Options.Problems()); err != nil {
		return nil, err
	}
	r := &restoreRun{
		spec:   req.Spec,
		opts:   req.Options.WithDefaults(),
		logger: log.With(workflow.GetLogger(ctx), "restore", req.Spec.Name, "backup", req.Spec.BackupName),
		status: v1alpha1.RestoreStatus{Name: req.Spec.Name, Backup: req.Spec.BackupName, Phase: v1alpha1.PhaseNew, Resources: map[string]v1alpha1.TypeOutcome{}},
	}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

type restoreRun struct {
	spec    v1alpha1.RestoreSpec
	opts    v1alpha1.RestoreOptions
	logger  log.Logger
	status  v1alpha1.RestoreStatus
	volumes restoreVolumes
	// dryRun asks the API server what each write would do and writes
	// nothing: no volume, hook, relink, operation or status.
	dryRun bool
	// extensions counts the extensions the plan kept that act on
	// restores; operationsError is the first failed operation's.
	extensions      int
	operationsError string
}

func (r *restoreRun) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.RestoreStatus, error) {
		return &r.status, nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	start := workflow.Now(ctx).UTC()
	r.status.StartTime = &start
	return workflow.UpsertTypedSearchAttributes(ctx,
		v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindRestore),
		v1alpha1.SearchAttrName.ValueSet(r.spec.Name),
		v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
	)
}

func (r *restoreRun) run(ctx workflow.Context) (*v1alpha1.RestoreStatus, error) {
	r.setPhase(ctx, v1alpha1.PhaseInProgress)
	plan, err := r.plan(ctx)
	if err != nil {
		return r.end(ctx, err)
	}
	r.startVolumes(ctx, plan.Volumes)
	deferred := 0
	for _, group := range applyGroups(plan.Types) {
		if ctx.Err() != nil {
			return r.end(ctx, temporal.NewCanceledError())
		}
		first := group[0].GroupResource()
		if first == claimsGroupResource {
			if err := r.awaitVolumes(ctx); err != nil {
				return r.end(ctx, err)
			}
		}
		n, err := r.apply(ctx, group)
		if slices.ContainsFunc(group, func(t v1alpha1.RestoreType) bool { return t.GroupResource() == "pods" }) {
			// Even when the apply stopped half-way: the pods it made wait.
			r.startPodVolumes(ctx, plan.PodVolumes)
		}
		if err != nil {
			return r.end(ctx, err)
		}
		deferred += n
		if first == crdGroupResource {
			if err := r.step(ctx, restoreActs.WaitCRDsEstablished, r.opts.CRDEstablishTimeout.Duration+time.Minute); err != nil {
				return r.end(ctx, err)
			}
		}
	}
	if deferred > 0 {
		if err := r.step(ctx, restoreActs.RelinkOwners, time.Hour); err != nil {
			return r.end(ctx, err)
		}
	}
	if err := r.awaitPodVolumes(ctx); err != nil {
		return r.end(ctx, err)
	}
	if err := r.runHooks(ctx); err != nil {
		return r.end(ctx, err)
	}
	if err := r.runOperations(ctx); err != nil {
		return r.end(ctx, err)
	}
	return r.end(ctx, nil)
}

func (r *restoreRun) plan(ctx workflow.Context) (*v1alpha1.RestorePlanResult, error) {
	var plan v1alpha1.RestorePlanResult
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(time.Hour))
	if err := workflow.ExecuteActivity(actx, restoreActs.PlanRestore, v1alpha1.RestorePlanInput{Spec: r.spec, Options: r.opts}).Get(ctx, &plan); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if !r.dryRun {
		r.extensions = plan.Extensions
	}
	r.status.BackupFormat = plan.BackupFormat
	r.status.Skipped = plan.Skipped
	r.status.ResourceTypesTotal = len(plan.Types)
	r.status.ItemsTotal = plan.ItemsTotal + plan.ItemsSkipped
	r.status.ItemsSkipped = plan.ItemsSkipped
	for _, t := range plan.Types {
		gr := t.GroupResource()
		r.status.Resources[gr] = v1alpha1.TypeOutcome{Total: t.Items}
		r.status.Order = append(r.status.Order, gr)
	}
	r.logger.Info("Planned restore", "resourceTypes", len(plan.Types), "items", plan.ItemsTotal, "skippedByRule", plan.ItemsSkipped)
	r.updateDetails(ctx)
	return &plan, nil
}

// apply restores a group of resource types, one after another, and
// returns how many of their owner references wait for the relink step.
func (r *restoreRun) apply(ctx workflow.Context, group []v1alpha1.RestoreType) (int, error) {
	names := make([]string, len(group))
	for i, t := range group {
		names[i] = t.GroupResource()
	}
	r.status.Current = strings.Join(names, ", ")
	r.updateDetails(ctx)
	in := v1alpha1.ApplyInput{Restore: r.spec.Name, Backup: r.spec.BackupName, Location: r.spec.StorageLocation, Types: group,
		Policy: r.spec.ExistingResourcePolicy, PreserveNodePorts: r.spec.PreserveNodePorts, Options: r.opts, DryRun: r.dryRun,
		NamespaceMapping: r.spec.NamespaceMapping}
	claims := names[0] == claimsGroupResource
	if claims {
		in.ClaimVolumes = r.claimVolumes()
	}
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(6*time.Hour))
	var res v1alpha1.ApplyResult
	if err := workflow.ExecuteActivity(actx, restoreActs.ApplyResources, in).Get(ctx, &res); err != nil {
		return 0, fmt.Errorf("apply %s: %w", r.status.Current, err)
	}
	if claims {
		r.volumes.claimsApplied = true
	}
	deferred := 0
	for _, applied := range res.Types {
		deferred += applied.Deferred
		r.count(applied)
	}
	r.status.Current = ""
	r.updateDetails(ctx)
	return deferred, nil
}

// count adds a type's outcomes to the status.
func (r *restoreRun) count(applied v1alpha1.TypeApplied) {
	gr := applied.Resource
	o := r.status.Resources[gr].Add(applied.Outcome)
	o.Done = true
	r.status.Resources[gr] = o
	r.status.ResourceTypesDone++
	r.status.ItemsRestored += applied.Outcome.Restored
	r.status.ItemsSkipped += applied.Outcome.Skipped
	r.status.ItemsFailed += applied.Outcome.Failed
	if applied.Outcome.Failed > 0 {
		r.logger.Warn("Items not restored", "resource", gr, "failed", applied.Outcome.Failed)
	}
}

// step runs a restore step that needs only the restore's name.
func (r *restoreRun) step(ctx workflow.Context, activity func(context.Context, v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error), timeout time.Duration) error {
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(timeout))
	var res v1alpha1.StepResult
	in := v1alpha1.RestoreStepInput{Restore: r.spec.Name, Location: r.spec.StorageLocation, Options: r.opts}
	if err := workflow.ExecuteActivity(actx, activity, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("%s: %w", workflows.ActivityName(activity), err)
	}
	r.status.Warnings += res.Warnings
	return nil
}

// end records the outcome in the location, cleans up and sets the final
// phase. It runs on a disconnected context so a canceled or failed
// restore still says what it did.
func (r *restoreRun) end(ctx workflow.Context, runErr error) (*v1alpha1.RestoreStatus, error) {
	canceled := runErr != nil && (temporal.IsCanceledError(runErr) || errors.Is(ctx.Err(), workflow.ErrCanceled))
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	// Restored volumes are bound to their claims; volumes still running
	// are canceled, and one handed over to a claim that never came is
	// deleted.
	r.finishVolumes(dctx)
	r.finishPodVolumes(dctx)
	if runErr != nil {
		r.cancelOperations(dctx)
	}
	final, failure := v1alpha1.PhaseCompleted, ""
	switch {
	case canceled:
		final, failure = v1alpha1.PhaseCanceled, "canceled by request"
	case runErr != nil:
		final, failure = v1alpha1.PhaseFailed, flow.Reason(runErr)
	case r.status.ItemsFailed > 0:
		final, failure = v1alpha1.PhasePartiallyFailed, fmt.Sprintf("%d items could not be restored; see the results", r.status.ItemsFailed)
		if vf := r.volumesFailure(); vf != "" {
			failure += "; " + vf
		}
	case r.volumesFailure() != "":
		final, failure = v1alpha1.PhasePartiallyFailed, r.volumesFailure()
	}
	if hf := r.hooksFailure(); hf != "" && runErr == nil {
		final, failure = v1alpha1.PhasePartiallyFailed, strings.TrimPrefix(failure+"; "+hf, "; ")
	}
	if of := r.operationsFailure(); of != "" && runErr == nil {
		final, failure = v1alpha1.PhasePartiallyFailed, strings.TrimPrefix(failure+"; "+of, "; ")
	}
	now := workflow.Now(dctx).UTC()
	r.status.CompletionTime = &now
	r.status.Current = ""
	r.status.FailureReason = failure
	// Finalizing until the results are stored, so a client that sees the
	// final phase also finds results.json.
	r.setPhase(dctx, v1alpha1.PhaseFinalizing)

	recorded := r.status
	recorded.Phase = final
	actx := workflow.WithActivityOptions(dctx, r.activityOptions(time.Hour))
	var res v1alpha1.FinalizeRestoreResult
	finalized := true
	if err := workflow.ExecuteActivity(actx, restoreActs.FinalizeRestore, v1alpha1.FinalizeRestoreInput{Spec: r.spec, Status: recorded}).Get(dctx, &res); err != nil {
		// The stored outcomes are the only record of what was applied:
		// keep them for a look by hand rather than clean them up.
		r.logger.Warn("Recording the restore's results failed; its intermediate state is kept", "error", err)
		finalized = false
	} else {
		r.status.Warnings = res.Warnings
		if res.CompletionTime != nil {
			r.status.CompletionTime = res.CompletionTime
		}
		if res.Resources != nil {
			r.status.Resources = res.Resources
			r.status.ItemsRestored, r.status.ItemsSkipped, r.status.ItemsFailed = res.ItemsRestored, res.ItemsSkipped, res.ItemsFailed
		}
	}
	if finalized {
		cleanup := v1alpha1.RestoreStepInput{Restore: r.spec.Name, Location: r.spec.StorageLocation, Options: r.opts}
		if err := workflow.ExecuteActivity(actx, restoreActs.CleanupRestoreWork, cleanup).Get(dctx, nil); err != nil {
			r.logger.Warn("Cleanup of intermediate state failed", "error", err)
		}
	}
	r.setPhase(dctx, final)
	switch {
	case canceled:
		return &r.status, temporal.NewCanceledError("restore canceled")
	case runErr != nil:
		r.logger.Error("Restore failed", "error", runErr)
		return &r.status, runErr
	}
	r.logger.Info("Restore ended", "phase", r.status.Phase, "restored", r.status.ItemsRestored,
		"skipped", r.status.ItemsSkipped, "failed", r.status.ItemsFailed)
	return &r.status, nil
}

func (r *restoreRun) setPhase(ctx workflow.Context, p v1alpha1.Phase) {
	r.status.Phase = p
	flow.PublishPhase(ctx, r.logger, p)
	r.updateDetails(ctx)
}

// updateDetails keeps the Temporal UI's "current details" a one-glance
// summary of where the restore is.
func (r *restoreRun) updateDetails(ctx workflow.Context) {
	s := r.status
	var sb strings.Builder
	fmt.Fprintf(&sb, "**%s** restore `%s` from backup `%s`\n\n", s.Phase, s.Name, s.Backup)
	fmt.Fprintf(&sb, "- resource types: %d/%d\n", s.ResourceTypesDone, s.ResourceTypesTotal)
	if s.Current != "" {
		fmt.Fprintf(&sb, "- applying: %s (%d items)\n", s.Current, s.Resources[s.Current].Total)
	}
	if len(s.Volumes) > 0 {
		fmt.Fprintf(&sb, "- volumes: %s\n", volumeCounts(s.Volumes))
		for _, v := range s.Volumes {
			if v.Phase == v1alpha1.OperationInProgress && v.Progress != "" {
				fmt.Fprintf(&sb, "  - %s: %s\n", v.Key(), v.Progress)
			}
		}
	}
	fmt.Fprintf(&sb, "- items: %d restored, %d skipped, %d failed of %d\n", s.ItemsRestored, s.ItemsSkipped, s.ItemsFailed, s.ItemsTotal)
	if c := s.ExtensionOperations; c != nil {
		fmt.Fprintf(&sb, "- extension operations: %d: %d completed, %d failed, %d canceled\n", c.Total, c.Completed, c.Failed, c.Canceled)
	} else if s.Phase == v1alpha1.PhaseWaitingForOperations {
		fmt.Fprintf(&sb, "- waiting for the operations extensions started\n")
	}
	if s.Warnings > 0 {
		fmt.Fprintf(&sb, "- warnings: %d\n", s.Warnings)
	}
	if s.FailureReason != "" {
		fmt.Fprintf(&sb, "- reason: %s\n", s.FailureReason)
	}
	workflow.SetCurrentDetails(ctx, sb.String())
}

func (r *restoreRun) activityOptions(startToClose time.Duration) workflow.ActivityOptions {
	return flow.ActivityOptions(startToClose, r.opts.HeartbeatTimeout.Duration)
}
