package starter

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/workflows"
)

// VerifyBackup checks every stored object of a committed backup against
// its manifest, and its moved volume data with kopia (reading a sample
// of the files back, or all of them when full), on a worker (workflow
// verify/<name>, joined when one runs), and returns the verdict. A running backup is a ConflictError: it
// has nothing to check yet.
func (c *Client) VerifyBackup(ctx context.Context, name string, full bool) (*workflows.VerifyBackupResult, error) {
	v, err := c.GetBackup(ctx, name)
	if err != nil {
		return nil, err
	}
	if !v.Phase.Done() {
		return nil, &ConflictError{Message: fmt.Sprintf("backup %q is still running (phase %s): verify it once it is committed", name, v.Phase)}
	}
	id := workflows.VerifyWorkflowID(name)
	run, err := c.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAttrKind.ValueSet(workflows.KindVerify),
			workflows.SearchAttrName.ValueSet(name),
			workflows.SearchAttrPhase.ValueSet(string(workflows.PhaseNew)),
		),
	}, workflows.VerifyBackupWorkflowName, workflows.VerifyBackupRequest{Backup: name, Location: c.locationOr(v.Location), Full: full})
	if err != nil {
		return nil, fmt.Errorf("start verification of %s: %w", name, err)
	}
	var res workflows.VerifyBackupResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("verify backup %s: %w", name, err)
	}
	return &res, nil
}
