package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// DeleteBackup starts the deletion of a backup's data from its location,
// as workflow delete/<name>. A running backup is a ConflictError unless
// cancelRunning, which cancels it and waits for its run to close first. A
// Velero backup is Velero's to delete. Deleting again is harmless.
func (c *Client) DeleteBackup(ctx context.Context, name string, cancelRunning bool) (*CreateResult, error) {
	v, err := c.GetBackup(ctx, name)
	if err != nil {
		return nil, err
	}
	if v.Format == v1alpha1.BackupFormatVelero {
		return nil, &ConflictError{Message: fmt.Sprintf("backup %q was written by Velero; delete it with Velero", name)}
	}
	if v.ImmutableUntil != nil && time.Now().Before(*v.ImmutableUntil) {
		return nil, &ConflictError{Message: (&location.ImmutableError{Backup: name, Until: *v.ImmutableUntil}).Error()}
	}
	if v.Source == SourceTemporal && v.EndTime == nil {
		if !cancelRunning {
			return nil, &ConflictError{Message: fmt.Sprintf("backup %q is still running (phase %s); cancel it first, or delete with cancel", name, v.Phase)}
		}
		if err := c.cancelAndWait(ctx, v); err != nil {
			return nil, err
		}
	}
	if err := c.checkDeletable("backup "+name, c.locationOr(v.Location)); err != nil {
		return nil, err
	}
	return c.startDeletion(ctx, v1alpha1.DeleteWorkflowID(name),
		v1alpha1.DeleteBackupRequest{Backup: name, Location: c.locationOr(v.Location), Reason: "requested"})
}

// startDeletion starts (or joins, when one is running) the deletion
// workflow id for req: a backup's or an etcd snapshot's.
func (c *Client) startDeletion(ctx context.Context, id string, req v1alpha1.DeleteBackupRequest) (*CreateResult, error) {
	run, err := c.startOrJoin(ctx, id, v1alpha1.KindDeletion, req.Backup, v1alpha1.DeleteBackupWorkflowName, req)
	if err != nil {
		return nil, fmt.Errorf("start deletion of %s: %w", req.Backup, err)
	}
	return &CreateResult{Name: req.Backup, WorkflowID: id, RunID: run.GetRunID(), Created: true, UIURL: c.RunURL(id, run.GetRunID())}, nil
}

// startOrJoin starts workflow id, or joins it while it runs: one at a
// time per name, and a finished one may run again.
func (c *Client) startOrJoin(ctx context.Context, id, kind, name, workflowName string, arg any) (client.WorkflowRun, error) {
	return c.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                v1alpha1.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(kind),
			v1alpha1.SearchAttrName.ValueSet(name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
		),
	}, workflowName, arg)
}

// cancelAndWait cancels a running backup and waits until its run closed,
// so nothing writes to the location while it is deleted.
func (c *Client) cancelAndWait(ctx context.Context, v *BackupView) error {
	if _, err := c.CancelBackup(ctx, v.Name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	err := c.temporal.GetWorkflow(ctx, v.WorkflowID, v.RunID).Get(ctx, nil)
	if ctx.Err() != nil {
		return fmt.Errorf("backup %s did not stop after its cancel: %w", v.Name, ctx.Err())
	}
	_ = err // a canceled run ends with an error; that is the point
	return nil
}

// WaitRun waits until a run started by this client closes and returns
// its error.
func (c *Client) WaitRun(ctx context.Context, workflowID, runID string) error {
	return c.temporal.GetWorkflow(ctx, workflowID, runID).Get(ctx, nil)
}
