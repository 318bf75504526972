package main

import (
	"context"
	"strings"

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
		// As in Velero, one action's failure does not keep the others
		// from cleaning up.
		var failed []string
		for _, act := range a.deletes {
			if !act.sel.selects(req.Resource, item.GetNamespace(), item.GetLabels()) {
				continue
			}
			if err := act.do.Execute(&velero.DeleteItemActionExecuteInput{Item: item, Backup: backup}); err != nil {
				msg, err := itemError(act.name, err)
				if err != nil {
					return nil, err
				}
				failed = append(failed, msg)
			}
		}
		resp.Items[i].Error = strings.Join(failed, "; ")
	}
	return resp, nil
}
