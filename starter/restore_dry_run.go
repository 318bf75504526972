package starter

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/workflows"
)

// DryRunRestore finds what the restore req asks for would do, without
// doing it: it validates req and its backup as CreateRestore does, runs a
// short dry-run workflow that asks the API server, in its dry-run mode,
// what each write would do (as the caller), and waits for its report.
func (c *Client) DryRunRestore(ctx context.Context, req CreateRestoreRequest) (*workflows.RestoreDryRun, error) {
	if req.ScheduleName != "" {
		if err := c.resolveSchedule(ctx, &req.RestoreSpec); err != nil {
			return nil, err
		}
	}
	req.Options.ActingAs = ActingAs(ctx)
	spec := req.RestoreSpec.WithDefaults(c.opts.DefaultLocation)
	if err := c.validateRestore(&spec, req.Options.Problems()); err != nil {
		return nil, err
	}
	if err := c.checkRestorable(ctx, spec); err != nil {
		return nil, err
	}
	id := workflows.RestoreDryRunWorkflowID(spec.Name, nonce())
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: workflows.TaskQueue,
		Memo: actingAsMemo(map[string]any{workflows.MemoLocation: spec.StorageLocation, workflows.MemoBackup: spec.BackupName},
			req.Options.ActingAs),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAttrKind.ValueSet(workflows.KindRestoreDryRun),
			workflows.SearchAttrName.ValueSet(spec.Name),
			workflows.SearchAttrPhase.ValueSet(string(workflows.PhaseNew)),
			workflows.SearchAttrActingAs.ValueSet(req.Options.ActingAs.UsernameOrWorker()),
		),
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, workflows.RestoreDryRunWorkflowName,
		workflows.RestoreRequest{Spec: spec, Options: req.Options})
	if err != nil {
		return nil, fmt.Errorf("start dry run of restore %s: %w", spec.Name, err)
	}
	var out workflows.RestoreDryRun
	if err := run.Get(ctx, &out); err != nil {
		return nil, dryRunFailure(spec.Name, err)
	}
	return &out, nil
}
