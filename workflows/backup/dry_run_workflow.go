package backup

import (
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// BackupDryRunWorkflow finds what a backup of the spec would take: it
// runs the backup's planning and collection under a scratch name in the
// location, reports types, related objects, volumes and hooks, and
// removes the scratch data whatever happens. It takes no snapshot, runs
// no hook and creates no repository.
func BackupDryRunWorkflow(ctx workflow.Context, req v1alpha1.BackupRequest) (*v1alpha1.BackupDryRun, error) {
	if err := flow.InvalidOptions(req.Options.Problems()); err != nil {
		return nil, err
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	spec := req.Spec
	name := spec.Name
	spec.Name = v1alpha1.DryRunScratchName(id)
	b := &backupRun{
		spec:   spec,
		opts:   req.Options.WithDefaults(),
		logger: log.With(workflow.GetLogger(ctx), "backup", name, "dryRun", spec.Name),
		status: v1alpha1.BackupStatus{Name: name, Phase: v1alpha1.PhaseNew, Resources: map[string]v1alpha1.ResourceProgress{}},
		dryRun: true,
	}
	b.takeBaseline(ctx)
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.BackupStatus, error) {
		return &b.status, nil
	}); err != nil {
		return nil, err
	}
	result, runErr := b.dryRunSteps(ctx)
	result.Name, result.WorkflowID = name, id

	scratch := v1alpha1.SummarizeDryRunInput{Scratch: spec.Name, Location: spec.StorageLocation}
	dctx, runErr := flow.DiscardDryRun(ctx, b.activityOptions(time.Hour), storeActs.DiscardDryRun, scratch, runErr)
	if runErr != nil {
		b.status.FailureReason = flow.Reason(runErr)
		b.setPhase(dctx, v1alpha1.PhaseFailed)
		return nil, runErr
	}
	b.setPhase(dctx, v1alpha1.PhaseCompleted)
	return result, nil
}

// dryRunSteps are the backup's steps up to what it would write.
func (b *backupRun) dryRunSteps(ctx workflow.Context) (*v1alpha1.BackupDryRun, error) {
	result := &v1alpha1.BackupDryRun{Resources: map[string]int{}}
	b.setPhase(ctx, v1alpha1.PhaseInProgress)
	plan, err := b.plan(ctx)
	if err != nil {
		return result, err
	}
	if err := b.planAndCollect(ctx, plan); err != nil {
		return result, err
	}
	if plan.CollectRelated {
		if err := b.collectRelated(ctx, plan.Types); err != nil {
			return result, err
		}
	}
	if plan.Extensions > 0 {
		if err := b.collectAdditional(ctx); err != nil {
			return result, err
		}
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(time.Hour))
	in := v1alpha1.SummarizeDryRunInput{Scratch: b.spec.Name, Location: b.spec.StorageLocation, Related: b.related}
	var sum v1alpha1.DryRunSummary
	if err := workflow.ExecuteActivity(actx, storeActs.SummarizeDryRun, in).Get(ctx, &sum); err != nil {
		return result, err
	}

	result.Namespaces, result.Skipped, result.Related, result.Errors = plan.Namespaces, b.status.Skipped, sum.Related, b.status.Errors
	result.ExtensionOperations = b.extensionOperations
	for _, gr := range workflow.DeterministicKeys(b.status.Resources) {
		result.Resources[gr] = b.status.Resources[gr].Items
	}
	for _, op := range b.status.Operations {
		action := "snapshot"
		switch op.Kind {
		case v1alpha1.OperationKindDataUpload:
			action = "snapshot and move data"
		case v1alpha1.OperationKindPodVolumeBackup:
			action = "copy from pod on node " + op.Volume.PodVolume.Node + " (" + op.Volume.PodVolume.SelectedBy + ")"
		}
		result.Volumes = append(result.Volumes, v1alpha1.DryRunVolume{Volume: op.Volume, Action: action})
	}
	if b.hooks != nil {
		result.HooksTotal = len(b.hooks.pods)
		for _, p := range b.hooks.pods[:min(len(b.hooks.pods), v1alpha1.DryRunNamesPerType)] {
			result.Hooks = append(result.Hooks, p.pod)
		}
	}
	result.Warnings = append(sum.Warnings, b.hookWarnings...)
	if len(result.Warnings) > v1alpha1.DryRunWarningLines {
		result.Warnings = result.Warnings[:v1alpha1.DryRunWarningLines]
	}
	result.WarningsTotal = b.status.Warnings
	return result, nil
}
