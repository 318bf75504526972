package starter

import (
	"context"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// VerifyBackup checks every stored object of a committed backup against
// its manifest, and its moved volume data with kopia (reading a sample
// of the files back, or all of them when full), on a worker (workflow
// verify/<name>, joined when one runs), and returns the verdict. A running backup is a ConflictError: it
// has nothing to check yet.
func (c *Client) VerifyBackup(ctx context.Context, name string, full bool) (*v1alpha1.VerifyBackupResult, error) {
	v, err := c.GetBackup(ctx, name)
	if err != nil {
		return nil, err
	}
	if !v.Phase.Done() {
		return nil, &ConflictError{Message: fmt.Sprintf("backup %q is still running (phase %s): verify it once it is committed", name, v.Phase)}
	}
	id := v1alpha1.VerifyWorkflowID(name)
	run, err := c.startOrJoin(ctx, id, v1alpha1.KindVerify, name, v1alpha1.VerifyBackupWorkflowName,
		v1alpha1.VerifyBackupRequest{Backup: name, Location: c.locationOr(v.Location), Full: full})
	if err != nil {
		return nil, fmt.Errorf("start verification of %s: %w", name, err)
	}
	var res v1alpha1.VerifyBackupResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("verify backup %s: %w", name, err)
	}
	return &res, nil
}
