package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// RestoreItems runs the restore item actions over each item, each over
// what the one before it returned, as Velero does: a skip ends the item's
// actions.
func (a *adapter) RestoreItems(_ context.Context, req extension.RestoreItemsRequest) (*extension.RestoreItemsResponse, error) {
	restore := a.restoreObject(req.Restore, req.Backup, req.NamespaceMapping)
	resp := &extension.RestoreItemsResponse{Items: make([]extension.RestoreItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		ans, err := a.restoreItem(req, restore, raw)
		if err != nil {
			return nil, err
		}
		resp.Items[i] = ans
	}
	return resp, nil
}

func (a *adapter) restoreItem(req extension.RestoreItemsRequest, restore *velerov1.Restore, raw json.RawMessage) (extension.RestoreItemAnswer, error) {
	item, err := decode(raw)
	if err != nil {
		return extension.RestoreItemAnswer{Error: err.Error()}, nil
	}
	// cairn sends the item as it will be created; Velero's plugins also
	// get it as backed up: the closest is the same, in its namespace of
	// the backup.
	fromBackup := item.DeepCopy()
	backedUp := map[string]string{}
	for src, dst := range req.NamespaceMapping {
		backedUp[dst] = src
	}
	if src, ok := backedUp[item.GetNamespace()]; ok {
		fromBackup.SetNamespace(src)
	}
	mapNamespace := func(ns string) string {
		if dst, ok := req.NamespaceMapping[ns]; ok {
			return dst
		}
		return ns
	}
	var ans extension.RestoreItemAnswer
	var ops []pluginOperation
	var wait time.Duration
	changed := false
	for _, act := range a.restores {
		if !act.sel.selects(req.Resource, item.GetNamespace(), item.GetLabels()) {
			continue
		}
		out, err := act.do.Execute(&velero.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: fromBackup, Restore: restore})
		if err != nil {
			msg, err := itemError(act.name, err)
			return extension.RestoreItemAnswer{Error: msg}, err
		}
		if out == nil {
			continue
		}
		if out.SkipRestore {
			return extension.RestoreItemAnswer{Skip: "velero plugin " + act.name + " skips it"}, nil
		}
		if out.UpdatedItem != nil {
			item, changed = asUnstructured(out.UpdatedItem), true
		}
		// Velero's plugins name additional items as backed up.
		additional := refs(out.AdditionalItems, mapNamespace)
		ans.AdditionalItems = append(ans.AdditionalItems, additional...)
		if out.WaitForAdditionalItems && len(additional) > 0 {
			if ans.WaitFor == nil {
				ans.WaitFor = &extension.WaitFor{}
			}
			ans.WaitFor.Items = append(ans.WaitFor.Items, additional...)
			wait = max(wait, out.AdditionalItemsReadyTimeout)
		}
		if out.OperationID != "" {
			ops = append(ops, pluginOperation{Action: act.name, ID: out.OperationID})
		}
	}
	if ans.WaitFor != nil && wait > 0 {
		ans.WaitFor.Timeout = min(wait, extension.MaxWaitTimeout).String()
	}
	if changed {
		if ans.Item, err = item.MarshalJSON(); err != nil {
			return extension.RestoreItemAnswer{}, fmt.Errorf("encode %s: %w", item.GetName(), err)
		}
	}
	ans.Operation, err = operationStart(ops, nil)
	return ans, err
}

// RestoreOperation waits for the operations the actions started for one
// restored item.
func (a *adapter) RestoreOperation(ctx context.Context, req extension.RestoreOperationRequest) (*extension.RestoreOperationResult, error) {
	restore := a.restoreObject(req.Restore, req.Backup, nil)
	desc, err := a.await(ctx, req.Data, func(name string) (progressor, bool) {
		return progressorOf(a.restores, name,
			func(act riav2.RestoreItemAction, id string) (progress, error) { return act.Progress(id, restore) },
			func(act riav2.RestoreItemAction, id string) error { return act.Cancel(id, restore) })
	})
	if err != nil {
		return nil, err
	}
	return &extension.RestoreOperationResult{Description: desc}, nil
}
