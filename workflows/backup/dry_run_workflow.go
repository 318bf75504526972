package backup

import (
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// BackupDryRunWorkflow finds what a backup of the spec would take: it
// runs the backup's planning and collection under a scratch name in the
// location, reports types, related objects, volumes and hooks, and
// removes the scratch data whatever happens. It takes no snapshot, runs
// no hook and creates no repository.
func BackupDryRunWorkflow(ctx workflow.Context, req workflows.BackupRequest) (*workflows.BackupDryRun, error) {
	if err := flow.InvalidOptions(req.Options.Problems()); err != nil {
		return nil, err
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	spec := req.Spec
	name := spec.Name
	spec.Name = workflows.DryRunScratchName(id)
	b := &backupRun{
		spec:   spec,
		opts:   req.Options.WithDefaults(),
		logger: log.With(workflow.GetLogger(ctx), "backup", name, "dryRun", spec.Name),
		status: workflows.BackupStatus{Name: name, Phase: workflows.PhaseNew, Resources: map[string]workflows.ResourceProgress{}},
		dryRun: true,
	}
	if err := workflow.SetQueryHandler(ctx, workflows.QueryStatus, func() (*workflows.BackupStatus, error) {
		return &b.status, nil
	}); err != nil {
		return nil, err
	}
	result, runErr := b.dryRunSteps(ctx)
	result.Name, result.WorkflowID = name, id

	scratch := workflows.SummarizeDryRunInput{Scratch: spec.Name, Location: spec.StorageLocation}
	dctx, runErr := flow.DiscardDryRun(ctx, b.activityOptions(time.Hour), storeActs.DiscardDryRun, scratch, runErr)
	if runErr != nil {
		b.status.FailureReason = flow.Reason(runErr)
		b.setPhase(dctx, workflows.PhaseFailed)
		return nil, runErr
	}
	b.setPhase(dctx, workflows.PhaseCompleted)
	return result, nil
}

// dryRunSteps are the backup's steps up to what it would write.
func (b *backupRun) dryRunSteps(ctx workflow.Context) (*workflows.BackupDryRun, error) {
	result := &workflows.BackupDryRun{Resources: map[string]int{}}
	b.setPhase(ctx, workflows.PhaseInProgress)
	plan, err := b.plan(ctx)
	if err != nil {
		return result, err
	}
	if err := b.planVolumes(ctx); err != nil {
		return result, err
	}
	if err := b.planHooks(ctx); err != nil {
		return result, err
	}
	if err := b.collectAll(ctx, plan.Types); err != nil {
		return result, err
	}
	if plan.CollectRelated {
		if err := b.collectRelated(ctx, plan.Types); err != nil {
			return result, err
		}
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := workflows.SummarizeDryRunInput{Scratch: b.spec.Name, Location: b.spec.StorageLocation, Related: b.related}
	var sum workflows.DryRunSummary
	if err := workflow.ExecuteActivity(actx, storeActs.SummarizeDryRun, in).Get(ctx, &sum); err != nil {
		return result, err
	}

	result.Namespaces, result.Skipped, result.Related, result.Errors = plan.Namespaces, b.status.Skipped, sum.Related, b.status.Errors
	for _, gr := range workflow.DeterministicKeys(b.status.Resources) {
		result.Resources[gr] = b.status.Resources[gr].Items
	}
	for _, op := range b.status.Operations {
		action := "snapshot"
		if op.Kind == workflows.OperationKindDataUpload {
			action = "snapshot and move data"
		}
		result.Volumes = append(result.Volumes, workflows.DryRunVolume{Volume: op.Volume, Action: action})
	}
	if b.hooks != nil {
		result.HooksTotal = len(b.hooks.pods)
		for _, p := range b.hooks.pods[:min(len(b.hooks.pods), workflows.DryRunNamesPerType)] {
			result.Hooks = append(result.Hooks, p.pod)
		}
	}
	result.Warnings = append(sum.Warnings, b.hookWarnings...)
	if len(result.Warnings) > workflows.DryRunWarningLines {
		result.Warnings = result.Warnings[:workflows.DryRunWarningLines]
	}
	result.WarningsTotal = b.status.Warnings
	return result, nil
}
