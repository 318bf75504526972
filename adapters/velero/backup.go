package main

import (
	"context"
	"encoding/json"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// BackupItems runs the backup item actions over each item, each action
// over what the one before it returned, as Velero does.
func (a *adapter) BackupItems(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	backup := a.backupObject(req.Backup)
	resp := &extension.BackupItemsResponse{Items: make([]extension.BackupItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		ans, err := a.backupItem(req.Resource, backup, raw)
		if err != nil {
			return nil, err
		}
		resp.Items[i] = ans
	}
	return resp, nil
}

func (a *adapter) backupItem(res extension.Resource, backup *velerov1.Backup, raw json.RawMessage) (extension.BackupItemAnswer, error) {
	item, err := decode(raw)
	if err != nil {
		return extension.BackupItemAnswer{Error: err.Error()}, nil
	}
	var ans extension.BackupItemAnswer
	var ops []pluginOperation
	var toUpdate []extension.ObjectRef
	changed := false
	for _, act := range a.backups {
		if !act.sel.selects(res, item.GetNamespace(), item.GetLabels()) {
			continue
		}
		updated, additional, opID, updates, err := act.do.Execute(item, backup)
		if err != nil {
			msg, err := itemError(act.name, err)
			return extension.BackupItemAnswer{Error: msg}, err
		}
		if updated != nil {
			item, changed = asUnstructured(updated), true
		}
		ans.AdditionalItems = append(ans.AdditionalItems, refs(additional, same)...)
		if opID != "" {
			ops = append(ops, pluginOperation{Action: act.name, ID: opID})
			toUpdate = append(toUpdate, refs(updates, same)...)
		}
	}
	if changed {
		if ans.Item, err = item.MarshalJSON(); err != nil {
			return extension.BackupItemAnswer{}, err
		}
	}
	ans.Operation, err = operationStart(ops, toUpdate)
	return ans, err
}

// BackupOperation waits for the operations the actions started for one
// item, asking their progress.
func (a *adapter) BackupOperation(ctx context.Context, req extension.BackupOperationRequest) (*extension.BackupOperationResult, error) {
	backup := a.backupObject(req.Backup)
	desc, err := a.await(ctx, req.Data, func(name string) (progressor, bool) {
		return progressorOf(a.backups, name,
			func(act biav2.BackupItemAction, id string) (progress, error) { return act.Progress(id, backup) },
			func(act biav2.BackupItemAction, id string) error { return act.Cancel(id, backup) })
	})
	if err != nil {
		return nil, err
	}
	return &extension.BackupOperationResult{Description: desc}, nil
}
