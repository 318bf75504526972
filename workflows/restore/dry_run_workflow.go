package restore

import (
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// RestoreDryRunWorkflow finds what a restore would do: it runs the
// restore's plan under a scratch name in the location, asks the API
// server, in its dry-run mode, what each write would do, reports it type
// by type, and removes the scratch data whatever happens. It writes
// nothing to the cluster and restores no volume data.
func RestoreDryRunWorkflow(ctx workflow.Context, req v1alpha1.RestoreRequest) (*v1alpha1.RestoreDryRun, error) {
	if err := flow.InvalidOptions(req.Options.Problems()); err != nil {
		return nil, err
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	spec := req.Spec
	name := spec.Name
	spec.Name = v1alpha1.DryRunScratchName(id)
	r := &restoreRun{
		spec:   spec,
		opts:   req.Options.WithDefaults(),
		logger: log.With(workflow.GetLogger(ctx), "restore", name, "backup", spec.BackupName, "dryRun", spec.Name),
		status: v1alpha1.RestoreStatus{Name: name, Backup: spec.BackupName, Phase: v1alpha1.PhaseNew, Resources: map[string]v1alpha1.TypeOutcome{}},
		dryRun: true,
	}
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.RestoreStatus, error) {
		return &r.status, nil
	}); err != nil {
		return nil, err
	}
	result, runErr := r.dryRunSteps(ctx)

	scratch := v1alpha1.SummarizeRestoreDryRunInput{Scratch: spec.Name, Location: spec.StorageLocation}
	dctx, runErr := flow.DiscardDryRun(ctx, r.activityOptions(time.Hour), restoreActs.DiscardRestoreDryRun, scratch, runErr)
	if runErr != nil {
		r.status.FailureReason = flow.Reason(runErr)
		r.setPhase(dctx, v1alpha1.PhaseFailed)
		return nil, runErr
	}
	result.Name, result.Backup, result.WorkflowID = name, spec.BackupName, id
	r.setPhase(dctx, v1alpha1.PhaseCompleted)
	return result, nil
}

// dryRunSteps plans the restore and applies each type in dry-run mode.
func (r *restoreRun) dryRunSteps(ctx workflow.Context) (*v1alpha1.RestoreDryRun, error) {
	r.setPhase(ctx, v1alpha1.PhaseInProgress)
	plan, err := r.plan(ctx)
	if err != nil {
		return nil, err
	}
	for _, group := range applyGroups(plan.Types) {
		if _, err := r.apply(ctx, group); err != nil {
			return nil, err
		}
	}
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(time.Hour))
	in := v1alpha1.SummarizeRestoreDryRunInput{Scratch: r.spec.Name, Location: r.spec.StorageLocation, Order: r.status.Order}
	var result v1alpha1.RestoreDryRun
	if err := workflow.ExecuteActivity(actx, restoreActs.SummarizeRestoreDryRun, in).Get(ctx, &result); err != nil {
		return nil, err
	}
	result.Order, result.Skipped = r.status.Order, plan.Skipped
	result.NamespaceMapping, result.StorageClassMapping = r.spec.NamespaceMapping, plan.StorageClasses
	for _, v := range plan.Volumes {
		result.Volumes = append(result.Volumes, v.Namespace+"/"+v.Claim)
	}
	return &result, nil
}
