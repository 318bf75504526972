package backup

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// BackupWorkflow backs up the Kubernetes objects a spec selects into a
// backup location: plan, collect each resource type, collect related
// cluster-scoped objects, finalize. Its history grows with resource types,
// never with items.
func BackupWorkflow(ctx workflow.Context, req v1alpha1.BackupRequest) (*v1alpha1.BackupStatus, error) {
	if err := flow.InvalidOptions(req.Options.Problems()); err != nil {
		return nil, err
	}
	b := &backupRun{
		spec:   req.Spec,
		opts:   req.Options.WithDefaults(),
		logger: log.With(workflow.GetLogger(ctx), "backup", req.Spec.Name),
		status: v1alpha1.BackupStatus{Name: req.Spec.Name, Phase: v1alpha1.PhaseNew, Resources: map[string]v1alpha1.ResourceProgress{}},
	}
	b.takeBaseline(ctx)
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	return b.run(ctx)
}

type backupRun struct {
	spec   v1alpha1.BackupSpec
	opts   v1alpha1.BackupOptions
	logger log.Logger
	status v1alpha1.BackupStatus
	hooks  *hookRun // nil: no hooks planned
	// final is the phase finalize committed; the status takes it only
	// once the intermediate state is cleaned up, so a client that sees
	// it sees the run's end.
	final v1alpha1.Phase
	// workRemoved: finalize removed the intermediate state once it
	// committed, and no cleanup step follows.
	workRemoved bool
	// dryRun plans and collects only: no repository, snapshot or hook.
	dryRun bool
	// related are the types of the related cluster-scoped objects
	// collected, and hookWarnings the pods whose hooks would not run:
	// what a dry run reports.
	related      []string
	hookWarnings []string
	// extensionItemErrors counts the items extensions failed;
	// extensionOperations the operations they started, and
	// extensionOperationsError is the first that failed.
	extensionItemErrors      int
	extensionOperations      int
	extensionOperationsError string
	// sharesLeft counts, per type collected in shares of its namespaces,
	// the shares whose outcome is still to come.
	sharesLeft map[string]int
	// baseline: the run is at versionBaseline.
	baseline bool
}

func (b *backupRun) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.BackupStatus, error) {
		return &b.status, nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	start := workflow.Now(ctx).UTC()
	b.status.StartTime = &start
	if b.spec.TTL != nil {
		exp := start.Add(b.spec.TTL.Duration)
		b.status.Expiration = &exp
	}
	phase := v1alpha1.PhaseNew
	if b.baseline {
		phase = v1alpha1.PhaseInProgress
	}
	return workflow.UpsertTypedSearchAttributes(ctx,
		v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindBackup),
		v1alpha1.SearchAttrName.ValueSet(b.spec.Name),
		v1alpha1.SearchAttrPhase.ValueSet(string(phase)),
	)
}

func (b *backupRun) run(ctx workflow.Context) (*v1alpha1.BackupStatus, error) {
	if b.baseline {
		// setup published the phase.
		b.status.Phase = v1alpha1.PhaseInProgress
		b.updateDetails(ctx)
	} else {
		b.setPhase(ctx, v1alpha1.PhaseInProgress)
	}

	plan, err := b.plan(ctx)
	if err != nil {
		return b.end(ctx, err)
	}
	if err := b.planAndCollect(ctx, plan); err != nil {
		return b.end(ctx, err)
	}
	if plan.CollectRelated {
		if err := b.collectRelated(ctx, plan.Types); err != nil {
			return b.end(ctx, err)
		}
	}
	if plan.Extensions > 0 {
		if err := b.collectAdditional(ctx); err != nil {
			return b.end(ctx, err)
		}
	}
	if err := b.runOperations(ctx); err != nil {
		return b.end(ctx, err)
	}
	b.finishHooks(ctx)

	b.setPhase(ctx, v1alpha1.PhaseFinalizing)
	if err := b.collectSnapshots(ctx); err != nil {
		return b.end(ctx, err)
	}
	final := v1alpha1.PhaseCompleted
	if b.status.Errors > 0 {
		final = v1alpha1.PhasePartiallyFailed
		var reasons []string
		for _, r := range []string{b.hooksFailure(), b.operationsFailure(), b.extensionsFailure(), b.extensionOperationsFailure()} {
			if r != "" {
				reasons = append(reasons, r)
			}
		}
		if len(reasons) > 0 {
			b.status.FailureReason = strings.Join(reasons, "; ")
		}
	}
	if err := b.finalize(ctx, final); err != nil {
		return b.end(ctx, err)
	}
	return b.end(ctx, nil)
}

func (b *backupRun) plan(ctx workflow.Context) (*v1alpha1.PlanResult, error) {
	var plan v1alpha1.PlanResult
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(10*time.Minute))
	if err := workflow.ExecuteActivity(actx, clusterActs.PlanBackup, v1alpha1.PlanInput{Spec: b.spec, Options: b.opts}).Get(ctx, &plan); err != nil {
		return nil, err
	}
	b.status.KubernetesVersion = plan.KubernetesVersion
	b.status.Namespaces = plan.Namespaces
	b.status.Skipped = plan.Skipped
	b.status.ResourceTypesTotal = len(plan.Types)
	for _, t := range plan.Types {
		b.status.Resources[t.GroupResource()] = v1alpha1.ResourceProgress{Estimate: t.Estimate}
		b.status.ItemsEstimate += t.Estimate
	}
	b.logger.Info("Planned backup", "resourceTypes", len(plan.Types), "namespaces", plan.Namespaces, "skipped", len(plan.Skipped))
	b.updateDetails(ctx)
	return &plan, nil
}

// collectAll runs the collect activities collectInputs lays out, at most
// Concurrency at once. The first activity that fails for good stops new
// ones from starting; those running are waited for.
func (b *backupRun) collectAll(ctx workflow.Context, plan *v1alpha1.PlanResult) error {
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(6*time.Hour))
	sel := workflow.NewSelector(ctx)
	var firstErr error
	running := 0
	shared := b.version(ctx, versionNamespaceShares, 1) == 1
	layout := b.version(ctx, versionSmallTypesFirst, smallTypesTogether)
	inputs := b.collectInputs(plan, shared, layout)
	for _, in := range inputs {
		if firstErr != nil || ctx.Err() != nil {
			break
		}
		for running >= b.opts.Concurrency {
			sel.Select(ctx)
			running--
		}
		if firstErr != nil || ctx.Err() != nil {
			break
		}
		f := workflow.ExecuteActivity(actx, clusterActs.CollectResources, in)
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			var res v1alpha1.CollectResult
			if err := f.Get(ctx, &res); err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			for _, tc := range res.Types {
				b.recordCollect(tc)
			}
			b.updateDetails(ctx)
		})
	}
	for running > 0 {
		sel.Select(ctx)
		running--
	}
	if firstErr == nil && ctx.Err() != nil {
		return temporal.NewCanceledError()
	}
	return firstErr
}

// recordCollect counts the outcome of a type, or of a share of its
// namespaces: the type is done with its last share, and a type-level
// error counts once.
func (b *backupRun) recordCollect(res v1alpha1.TypeCollected) {
	gr := res.Resource
	p := b.status.Resources[gr]
	p.Items += res.Items
	if b.sharesLeft[gr] > 1 {
		b.sharesLeft[gr]--
	} else {
		p.Done = true
		b.status.ResourceTypesDone++
	}
	if res.Error != "" {
		if p.Error == "" {
			b.status.Errors++
			b.logger.Warn("Resource type not backed up", "resource", gr, "error", res.Error)
		}
		p.Error = res.Error
	}
	b.status.Resources[gr] = p
	b.status.ItemsDone += res.Items
	b.extensionOperations += res.Operations
	if res.ItemErrors > 0 {
		b.status.Errors += res.ItemErrors
		b.extensionItemErrors += res.ItemErrors
		b.logger.Warn("Items failed by extensions", "resource", gr, "items", res.ItemErrors)
	}
	if res.Skipped != "" {
		b.status.Skipped = append(b.status.Skipped, v1alpha1.SkippedResource{Resource: gr, Reason: res.Skipped})
		b.logger.Warn("Resource type not readable by the run's caller", "resource", gr, "reason", res.Skipped)
	}
}

func (b *backupRun) collectRelated(ctx workflow.Context, types []v1alpha1.ResourceType) error {
	var custom []string
	for _, t := range types {
		if t.Group != "" && !isBuiltinGroup(t.Group) && b.status.Resources[t.GroupResource()].Items > 0 {
			custom = append(custom, t.GroupResource())
		}
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := v1alpha1.CollectRelatedInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Options: b.opts, CustomResources: custom}
	var res v1alpha1.CollectRelatedResult
	if err := workflow.ExecuteActivity(actx, clusterActs.CollectRelated, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("collect related cluster-scoped objects: %w", err)
	}
	b.addItems(res.Resources)
	b.related = workflow.DeterministicKeys(res.Resources)
	b.status.Warnings += res.Warnings
	b.updateDetails(ctx)
	return nil
}

// collectAdditional stores the additional items extensions asked for.
func (b *backupRun) collectAdditional(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := v1alpha1.CollectAdditionalInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Options: b.opts}
	var res v1alpha1.CollectAdditionalResult
	if err := workflow.ExecuteActivity(actx, clusterActs.CollectAdditional, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("collect the additional items extensions asked for: %w", err)
	}
	b.addItems(res.Resources)
	b.status.Warnings += res.Warnings
	b.updateDetails(ctx)
	return nil
}

// addItems counts items a step stored per type on top of what collection
// stored, and marks those types done.
func (b *backupRun) addItems(resources map[string]int) {
	for _, gr := range workflow.DeterministicKeys(resources) {
		p := b.status.Resources[gr]
		p.Items += resources[gr]
		p.Done = true
		b.status.Resources[gr] = p
		b.status.ItemsDone += resources[gr]
	}
}

func (b *backupRun) finalize(ctx workflow.Context, final v1alpha1.Phase) error {
	status := b.status
	status.Phase = final
	now := workflow.Now(ctx).UTC()
	status.CompletionTime = &now
	info := workflow.GetInfo(ctx)
	in := v1alpha1.FinalizeInput{Spec: b.spec, Status: status, WorkRef: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(6*time.Hour))
	removes := b.version(ctx, versionFinalizeRemovesWork, 1) == 1
	var res v1alpha1.FinalizeResult
	if err := workflow.ExecuteActivity(actx, storeActs.FinalizeBackup, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("finalize: %w", err)
	}
	b.workRemoved = removes
	b.status.TarballBytes = res.TarballBytes
	// Every warning of the run is stored with the results finalize
	// counts: its count replaces the running one.
	b.status.Warnings = res.Warnings
	b.status.CompletionTime = &now
	if res.CompletionTime != nil {
		b.status.CompletionTime = res.CompletionTime
	}
	b.final = final
	return nil
}

// versionFinalizeRemovesWork marks the runs whose finalize removes the
// intermediate state once it has committed, which saves a committed
// backup the round trip of a cleanup step.
const versionFinalizeRemovesWork = "finalize-removes-work"

// end cleans up the intermediate state, unless finalize did, and records
// the final phase. It runs on a disconnected context so a canceled
// backup still cleans up.
func (b *backupRun) end(ctx workflow.Context, runErr error) (*v1alpha1.BackupStatus, error) {
	canceled := runErr != nil && (temporal.IsCanceledError(runErr) || errors.Is(ctx.Err(), workflow.ErrCanceled))
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	b.finishHooks(dctx)
	cleanup := v1alpha1.CleanupInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Discard: runErr != nil}
	if runErr != nil {
		cleanup.Phase, cleanup.StartTime = v1alpha1.PhaseFailed, b.status.StartTime
		if canceled {
			cleanup.Phase = v1alpha1.PhaseCanceled
		}
	}
	actx := workflow.WithActivityOptions(dctx, b.activityOptions(time.Hour))
	if runErr != nil {
		b.cancelExtensionOperations(dctx)
		b.discardSnapshots(dctx)
	}
	if runErr != nil || !b.workRemoved {
		if err := workflow.ExecuteActivity(actx, storeActs.CleanupBackupWork, cleanup).Get(dctx, nil); err != nil {
			b.logger.Warn("Cleanup of intermediate state failed", "error", err)
		}
	}

	if b.status.CompletionTime == nil {
		now := workflow.Now(dctx).UTC()
		b.status.CompletionTime = &now
	}
	switch {
	case canceled:
		b.status.FailureReason = "canceled by request"
		b.setPhase(dctx, v1alpha1.PhaseCanceled)
		return &b.status, temporal.NewCanceledError("backup canceled")
	case runErr != nil:
		b.status.FailureReason = flow.Reason(runErr)
		b.setPhase(dctx, v1alpha1.PhaseFailed)
		b.logger.Error("Backup failed", "error", runErr)
		return &b.status, runErr
	}
	b.setPhase(dctx, b.final)
	b.logger.Info("Backup ended", "phase", b.status.Phase, "items", b.status.ItemsDone, "errors", b.status.Errors)
	return &b.status, nil
}

func (b *backupRun) setPhase(ctx workflow.Context, p v1alpha1.Phase) {
	b.status.Phase = p
	flow.PublishPhase(ctx, b.logger, p)
	b.updateDetails(ctx)
}

// updateDetails keeps the Temporal UI's "current details" a one-glance
// summary of where the backup is.
func (b *backupRun) updateDetails(ctx workflow.Context) {
	s := b.status
	var sb strings.Builder
	fmt.Fprintf(&sb, "**%s** backup `%s`\n\n", s.Phase, s.Name)
	fmt.Fprintf(&sb, "- resource types: %d/%d\n", s.ResourceTypesDone, s.ResourceTypesTotal)
	if s.ItemsEstimate > 0 {
		fmt.Fprintf(&sb, "- items: %d of about %d\n", s.ItemsDone, s.ItemsEstimate)
	} else {
		fmt.Fprintf(&sb, "- items: %d\n", s.ItemsDone)
	}
	if c := s.ExtensionOperations; c != nil {
		fmt.Fprintf(&sb, "- extension operations: %d completed, %d failed, %d canceled of %d\n", c.Completed, c.Failed, c.Canceled, c.Total)
	} else if b.extensionOperations > 0 && s.Phase == v1alpha1.PhaseWaitingForOperations {
		fmt.Fprintf(&sb, "- extension operations: %d running\n", b.extensionOperations)
	}
	if len(s.Operations) > 0 {
		fmt.Fprintf(&sb, "- volume operations: %s\n", operationCounts(s.Operations))
		for _, op := range s.Operations {
			if !op.Phase.Done() && op.Progress != "" {
				fmt.Fprintf(&sb, "  - `%s`: %s\n", op.ID, op.Progress)
			}
		}
	}
	if len(s.Hooks) > 0 {
		failed := 0
		for _, h := range s.Hooks {
			if h.Failed() {
				failed++
			}
		}
		fmt.Fprintf(&sb, "- hooks: %d run, %d failed\n", len(s.Hooks), failed)
	}
	fmt.Fprintf(&sb, "- errors: %d, warnings: %d\n", s.Errors, s.Warnings)
	if s.FailureReason != "" {
		fmt.Fprintf(&sb, "- reason: %s\n", s.FailureReason)
	}
	workflow.SetCurrentDetails(ctx, sb.String())
}

func (b *backupRun) activityOptions(startToClose time.Duration) workflow.ActivityOptions {
	return flow.ActivityOptions(startToClose, b.opts.HeartbeatTimeout.Duration)
}

// isBuiltinGroup reports API groups served by Kubernetes itself, whose
// types have no CustomResourceDefinition.
func isBuiltinGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// extensionsFailure summarizes the items extensions failed for a
// PartiallyFailed backup's reason; "" when none.
func (b *backupRun) extensionsFailure() string {
	if b.extensionItemErrors == 0 {
		return ""
	}
	return fmt.Sprintf("extensions failed %d items, left out of the backup (see its errors)", b.extensionItemErrors)
}
