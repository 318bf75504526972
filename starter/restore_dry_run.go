package starter

import (
	"context"

	"github.com/cairn-backup/cairn/workflows"
)

// DryRunRestore finds what the restore req asks for would do, without
// doing it: it validates req and its backup as CreateRestore does, runs a
// short dry-run workflow that asks the API server, in its dry-run mode,
// what each write would do (as the caller), and waits for its report.
func (c *Client) DryRunRestore(ctx context.Context, req CreateRestoreRequest) (*workflows.RestoreDryRun, error) {
	spec, err := c.prepareRestore(ctx, &req)
	if err != nil {
		return nil, err
	}
	if err := c.checkRestorable(ctx, spec); err != nil {
		return nil, err
	}
	return runDryRun[workflows.RestoreDryRun](ctx, c, dryRun{
		id: workflows.RestoreDryRunWorkflowID(spec.Name, nonce()), kind: workflows.KindRestoreDryRun, name: spec.Name,
		workflow: workflows.RestoreDryRunWorkflowName,
		memo:     map[string]any{workflows.MemoLocation: spec.StorageLocation, workflows.MemoBackup: spec.BackupName},
		actingAs: req.Options.ActingAs, input: workflows.RestoreRequest{Spec: spec, Options: req.Options},
	})
}
