package starter

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// DryRunRestore finds what the restore req asks for would do, without
// doing it: it validates req and its backup as CreateRestore does, runs a
// short dry-run workflow that asks the API server, in its dry-run mode,
// what each write would do (as the caller), and waits for its report.
func (c *Client) DryRunRestore(ctx context.Context, req CreateRestoreRequest) (*v1alpha1.RestoreDryRun, error) {
	spec, err := c.prepareRestore(ctx, &req)
	if err != nil {
		return nil, err
	}
	if err := c.checkRestorable(ctx, spec); err != nil {
		return nil, err
	}
	return runDryRun[v1alpha1.RestoreDryRun](ctx, c, dryRun{
		id: v1alpha1.RestoreDryRunWorkflowID(spec.Name, nonce()), kind: v1alpha1.KindRestoreDryRun, name: spec.Name,
		workflow: v1alpha1.RestoreDryRunWorkflowName,
		memo:     map[string]any{v1alpha1.MemoLocation: spec.StorageLocation, v1alpha1.MemoBackup: spec.BackupName},
		actingAs: req.Options.ActingAs, input: v1alpha1.RestoreRequest{Spec: spec, Options: req.Options},
	})
}
