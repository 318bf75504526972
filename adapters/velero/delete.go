package main

import (
	"context"

	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// DeleteItems runs the delete item actions over each item of a deleted
// backup.
func (a *adapter) DeleteItems(_ context.Context, req extension.DeleteItemsRequest) (*extension.DeleteItemsResponse, error) {
	backup := a.backupObject(req.Backup)
	resp := &extension.DeleteItemsResponse{Items: make([]extension.DeleteItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		item, err := decode(raw)
		if err != nil {
			resp.Items[i].Error = err.Error()
			continue
		}
		for _, act := range a.deletes {
			if !act.sel.selects(req.Resource, item.GetNamespace(), item.GetLabels()) {
				continue
			}
			if err := act.do.Execute(&velero.DeleteItemActionExecuteInput{Item: item, Backup: backup}); err != nil {
				msg, err := itemError(act.name, err)
				if err != nil {
					return nil, err
				}
				resp.Items[i].Error = msg
				break
			}
		}
	}
	return resp, nil
}
