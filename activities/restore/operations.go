package restore

import (
	"context"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// RunRestoreOperations runs the operations extensions started for the
// restored items, each as its own ExtensionOperation workflow, and waits
// for them all. A retried attempt finds the workflows the one before
// started; a canceled restore cancels those still running. How each
// ended is kept for the restore's operations.json.
func (a *Activities) RunRestoreOperations(ctx context.Context, in v1alpha1.RunRestoreOperationsInput) (*v1alpha1.RunRestoreOperationsResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	exts, err := plannedExtensions(ctx, run)
	if err != nil {
		return nil, err
	}
	ops, err := readOperations(ctx, run, in.Restore, exts, in.Timeout)
	if err != nil {
		return nil, err
	}
	set := extcall.OperationSet{Operator: a.Operations, Registered: extcall.Registered(exts), Log: run.Log,
		BeatEvery: extcall.BeatEvery(ctx), Input: restoreOperationInput(in)}
	if err := set.RunAll(ctx, ops); err != nil {
		return nil, err
	}
	res := &v1alpha1.RunRestoreOperationsResult{}
	res.Operations, res.FirstError = extcall.Outcome(ops)
	if err := extcall.WriteOperationsRun(ctx, run.Loc, run.Restore.OperationsRun(), ops); err != nil {
		return nil, err
	}
	run.Log.Info("Operations ended", zap.Int("completed", res.Operations.Completed), zap.Int("failed", res.Operations.Failed),
		zap.Int("canceled", res.Operations.Canceled))
	return res, nil
}

// CancelRestoreOperations cancels every operation of a restore that ended
// early; those that ended are left alone. It is safe to run again.
func (a *Activities) CancelRestoreOperations(ctx context.Context, in v1alpha1.RestoreStepInput) error {
	if a.Operations == nil {
		return nil
	}
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	exts, err := plannedExtensions(ctx, run)
	if err != nil {
		return err
	}
	ops, err := readOperations(ctx, run, in.Restore, exts, 0)
	if err != nil {
		return err
	}
	return extcall.CancelAll(ctx, a.Operations, ops)
}

// readOperations reads the operations the apply steps recorded, in type
// and batch order.
func readOperations(ctx context.Context, run *runlog.Run, restore string, exts []v1alpha1.Extension, timeout time.Duration) ([]*extcall.Pending, error) {
	return extcall.ReadOperations(ctx, run.Loc, run.Restore.AllExtensionOperations(), exts, timeout, func(rec extcall.OperationRecord) string {
		return v1alpha1.RestoreOperationWorkflowID(restore, rec.Extension, rec.ID)
	})
}

// restoreOperationInput is the workflow input of one of the restore's
// operations.
func restoreOperationInput(in v1alpha1.RunRestoreOperationsInput) func(v1alpha1.Extension, *extcall.Pending) (v1alpha1.ExtensionOperationInput, error) {
	return func(ext v1alpha1.Extension, p *extcall.Pending) (v1alpha1.ExtensionOperationInput, error) {
		req, err := json.Marshal(extension.RestoreOperationRequest{Restore: in.Restore, Backup: in.Backup, Extension: ext.Name,
			OperationID: p.Rec.ID, Resource: p.Rec.Resource, Item: p.Rec.Item, Data: p.Rec.Data})
		if err != nil {
			return v1alpha1.ExtensionOperationInput{}, err
		}
		return v1alpha1.ExtensionOperationInput{Backup: in.Backup, Restore: in.Restore, Extension: ext.Name, TaskQueue: ext.TaskQueue,
			Timeout: metav1.Duration{Duration: in.Timeout}, HeartbeatTimeout: extcall.HeartbeatOf(in.Options.HeartbeatTimeout),
			Request: req}, nil
	}
}
