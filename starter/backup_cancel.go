package starter

import (
	"context"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// CancelBackup asks a running backup to stop. The workflow cleans up its
// partial state and ends Canceled; canceling a finished backup is a
// ConflictError, an unknown one ErrNotFound.
func (c *Client) CancelBackup(ctx context.Context, name string) (*BackupView, error) {
	v, err := c.GetBackup(ctx, name)
	if err != nil {
		return nil, err
	}
	if v.Source != SourceTemporal || v.Phase.Done() {
		return nil, &ConflictError{Message: fmt.Sprintf("backup %q is not running (phase %s); nothing to cancel", name, v.Phase)}
	}
	if err := c.temporal.CancelWorkflow(ctx, v1alpha1.BackupWorkflowID(name), v.RunID); err != nil {
		return nil, fmt.Errorf("cancel backup %s: %w", name, err)
	}
	return v, nil
}
