package extension

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// BackupHandler acts on the items a backup collects.
type BackupHandler interface {
	BackupItems(ctx context.Context, req BackupItemsRequest) (*BackupItemsResponse, error)
}

// BackupOperationHandler runs the operations a BackupHandler's answers
// start.
type BackupOperationHandler interface {
	BackupOperation(ctx context.Context, req BackupOperationRequest) (*BackupOperationResult, error)
}

// RestoreHandler acts on the items a restore creates.
type RestoreHandler interface {
	RestoreItems(ctx context.Context, req RestoreItemsRequest) (*RestoreItemsResponse, error)
}

// RestoreOperationHandler runs the operations a RestoreHandler's answers
// start.
type RestoreOperationHandler interface {
	RestoreOperation(ctx context.Context, req RestoreOperationRequest) (*RestoreOperationResult, error)
}

// RegisterRestore registers h's activities on w under the contract's
// names, RestoreOperation too when h has it.
func RegisterRestore(w worker.ActivityRegistry, h RestoreHandler) {
	w.RegisterActivityWithOptions(h.RestoreItems, activity.RegisterOptions{Name: RestoreItemsV1})
	if op, ok := h.(RestoreOperationHandler); ok {
		w.RegisterActivityWithOptions(op.RestoreOperation, activity.RegisterOptions{Name: RestoreOperationV1})
	}
}

// RegisterBackup registers h's activities on w under the contract's
// names, BackupOperation too when h has it. The worker must poll the task
// queue the extension is registered with in cairn.
func RegisterBackup(w worker.ActivityRegistry, h BackupHandler) {
	w.RegisterActivityWithOptions(h.BackupItems, activity.RegisterOptions{Name: BackupItemsV1})
	if op, ok := h.(BackupOperationHandler); ok {
		w.RegisterActivityWithOptions(op.BackupOperation, activity.RegisterOptions{Name: BackupOperationV1})
	}
}

// DeleteHandler deletes what an extension made for a deleted backup's
// items.
type DeleteHandler interface {
	DeleteItems(ctx context.Context, req DeleteItemsRequest) (*DeleteItemsResponse, error)
}

// RegisterDelete registers h's activity on w under the contract's name.
func RegisterDelete(w worker.ActivityRegistry, h DeleteHandler) {
	w.RegisterActivityWithOptions(h.DeleteItems, activity.RegisterOptions{Name: DeleteItemsV1})
}
