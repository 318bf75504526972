package cluster

import (
	"context"
	"encoding/json"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// operationsResultKey is where RunOperations' warnings go, beside the
// types' results.
const operationsResultKey = "_operations"

// RunOperations runs the operations extensions started during collection,
// each as its own ExtensionOperation workflow, waits for them all, then
// reads again the items the completed ones update and stores them in
// place of the collected copies. A retried attempt finds the workflows
// the one before started. A canceled backup cancels the operations still
// running.
func (a *Activities) RunOperations(ctx context.Context, in v1alpha1.RunOperationsInput) (*v1alpha1.RunOperationsResult, error) {
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()
	ops, err := readOperations(ctx, run, in.Backup, plan.Extensions, in.Timeout)
	if err != nil {
		return nil, err
	}
	set := extcall.OperationSet{Operator: a.Operations, Registered: extcall.Registered(plan.Extensions), Log: run.Log,
		BeatEvery: a.waitBeat(ctx), Input: backupOperationInput(in)}
	if err := set.RunAll(ctx, ops); err != nil {
		return nil, err
	}
	res := &v1alpha1.RunOperationsResult{}
	res.Operations, res.FirstError = extcall.Outcome(ops)
	updated := refSet{}
	for _, p := range ops {
		if p.Op.Phase == v1alpha1.OperationCompleted {
			for _, r := range p.Rec.ItemsToUpdate {
				updated.add(r)
			}
		}
	}
	if err := deleteUpdatedParts(ctx, run); err != nil {
		return nil, err
	}
	stored, warnings, err := a.storeObjects(ctx, run, plan, objectsToStore{
		refs: updated, actingAs: in.Options.ActingAs, unreachable: in.Options.ClusterUnreachableTimeout.Duration,
		asker: "operations", part: run.Keys.UpdatedPart,
	})
	if err != nil {
		return nil, err
	}
	res.Updated, res.Warnings = stored, len(warnings)
	if err := extcall.WriteOperationsRun(ctx, run.Loc, run.Keys.OperationsRun(), ops); err != nil {
		return nil, err
	}
	if err := StoreTypeResult(ctx, run, run.Keys.TypeResult(operationsResultKey), TypeResult{Warnings: warnings}); err != nil {
		return nil, err
	}
	run.Log.Info("Operations ended", zap.Int("completed", res.Operations.Completed), zap.Int("failed", res.Operations.Failed),
		zap.Int("canceled", res.Operations.Canceled), zap.Int("itemsUpdated", sum(stored)))
	return res, nil
}

// backupOperationInput is the workflow input of one of the backup's
// operations.
func backupOperationInput(in v1alpha1.RunOperationsInput) func(v1alpha1.Extension, *extcall.Pending) (v1alpha1.ExtensionOperationInput, error) {
	return func(ext v1alpha1.Extension, p *extcall.Pending) (v1alpha1.ExtensionOperationInput, error) {
		req, err := json.Marshal(extension.BackupOperationRequest{Backup: in.Backup, Extension: ext.Name, OperationID: p.Rec.ID,
			Resource: p.Rec.Resource, Item: p.Rec.Item, Data: p.Rec.Data})
		if err != nil {
			return v1alpha1.ExtensionOperationInput{}, err
		}
		return v1alpha1.ExtensionOperationInput{Backup: in.Backup, Extension: ext.Name, TaskQueue: ext.TaskQueue,
			Timeout: metav1.Duration{Duration: in.Timeout}, HeartbeatTimeout: extcall.HeartbeatOf(in.Options.HeartbeatTimeout),
			Request: req}, nil
	}
}

// CancelOperations cancels every operation of a backup that ended early;
// those that ended are left alone. It is safe to run again, and
// heartbeats as it goes.
func (a *Activities) CancelOperations(ctx context.Context, in v1alpha1.CancelOperationsInput) error {
	if a.Operations == nil {
		return nil
	}
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return err
	}
	defer run.End()
	ops, err := readOperations(ctx, run, in.Backup, plan.Extensions, 0)
	if err != nil {
		return err
	}
	return extcall.CancelAll(ctx, a.Operations, ops)
}

// readOperations reads the operations the collect steps recorded, in
// part order.
func readOperations(ctx context.Context, run *runlog.Run, backup string, exts []v1alpha1.Extension, timeout time.Duration) ([]*extcall.Pending, error) {
	return extcall.ReadOperations(ctx, run.Loc, run.Keys.AllExtensionOperations(), exts, timeout, func(rec extcall.OperationRecord) string {
		return v1alpha1.ExtensionOperationWorkflowID(backup, rec.Extension, rec.ID)
	})
}

// deleteUpdatedParts deletes the updated parts an attempt before this
// one wrote.
func deleteUpdatedParts(ctx context.Context, run *runlog.Run) error {
	keys, err := run.Loc.Keys(ctx, run.Keys.AllParts())
	if err != nil {
		return err
	}
	for _, key := range keys {
		if run.Keys.IsUpdatedPart(key) {
			if err := run.Loc.Delete(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
