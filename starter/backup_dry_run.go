package starter

import (
	"context"

	"github.com/cairn-backup/cairn/workflows"
)

// DryRunBackup finds what the backup req asks for would take, without
// taking it: it validates req as CreateBackup does, runs a short dry-run
// workflow (visible in the Temporal UI, leaving nothing in the location
// or the cluster) and waits for its report.
func (c *Client) DryRunBackup(ctx context.Context, req CreateBackupRequest) (*workflows.BackupDryRun, error) {
	if req.Schedule != "" {
		return nil, &InvalidError{Problems: []string{"schedule is set by cairn on the backups a schedule starts; leave it out"}}
	}
	req.Options.ActingAs = ActingAs(ctx)
	spec, err := c.prepareSpec(ctx, req.BackupSpec, req.Options.Problems())
	if err != nil {
		return nil, err
	}
	return runDryRun[workflows.BackupDryRun](ctx, c, dryRun{
		id: workflows.BackupDryRunWorkflowID(spec.Name, nonce()), kind: workflows.KindBackupDryRun, name: spec.Name,
		workflow: workflows.BackupDryRunWorkflowName, memo: map[string]any{workflows.MemoLocation: spec.StorageLocation},
		actingAs: req.Options.ActingAs, input: workflows.BackupRequest{Spec: spec, Options: req.Options},
	})
}
