package starter

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// DryRunBackup finds what the backup req asks for would take, without
// taking it: it validates req as CreateBackup does, runs a short dry-run
// workflow (visible in the Temporal UI, leaving nothing in the location
// or the cluster) and waits for its report.
func (c *Client) DryRunBackup(ctx context.Context, req CreateBackupRequest) (*v1alpha1.BackupDryRun, error) {
	if req.Schedule != "" {
		return nil, &InvalidError{Problems: []string{"schedule is set by cairn on the backups a schedule starts; leave it out"}}
	}
	req.Options.ActingAs = ActingAs(ctx)
	spec, err := c.prepareSpec(ctx, req.BackupSpec, req.Options.Problems())
	if err != nil {
		return nil, err
	}
	return runDryRun[v1alpha1.BackupDryRun](ctx, c, dryRun{
		id: v1alpha1.BackupDryRunWorkflowID(spec.Name, nonce()), kind: v1alpha1.KindBackupDryRun, name: spec.Name,
		workflow: v1alpha1.BackupDryRunWorkflowName, memo: map[string]any{v1alpha1.MemoLocation: spec.StorageLocation},
		actingAs: req.Options.ActingAs, input: v1alpha1.BackupRequest{Spec: spec, Options: req.Options},
	})
}
