package extension

import (
	"encoding/json"
	"fmt"
	"time"
)

// BackupItemsV1 is the activity cairn calls with a batch of items a
// backup collected, for every extension registered for their type.
const BackupItemsV1 = "cairn.extension.v1.BackupItems"

// Errors an extension may return. A Temporal application error of type
// ErrTypeRefused is not retried: the items of the call each fail with its
// message. Any other error is retried until the registration's timeout.
const ErrTypeRefused = "ExtensionRefused"

// Resource names one resource type, as discovery serves it.
type Resource struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
}

// ObjectRef points at one object of the cluster: an additional item to
// back up.
type ObjectRef struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// BackupItemsRequest is a batch of items of one type, in the order the
// backup listed them. The batch is bounded in bytes (MaxBatchBytes), so an
// answer of the same size stays well under Temporal's payload limit.
type BackupItemsRequest struct {
	// Backup is the name of the backup, Extension the name the extension
	// is registered under.
	Backup    string            `json:"backup"`
	Extension string            `json:"extension"`
	Resource  Resource          `json:"resource"`
	Items     []json.RawMessage `json:"items"`
	// DryRun says the backup is a dry run: what the extension answers is
	// not kept and no operation it starts runs, so it should change
	// nothing of its own either.
	DryRun bool `json:"dryRun,omitempty"`
}

// MaxBatchBytes bounds the JSON of the items of one request.
const MaxBatchBytes = 512 << 10

// BackupItemsResponse answers a request item by item: Items[i] is the
// answer for the request's Items[i], and there is one answer per item.
type BackupItemsResponse struct {
	Items []BackupItemAnswer `json:"items"`
}

// BackupItemAnswer is what to do with one item.
type BackupItemAnswer struct {
	// Item is the item to store in its place, of the same kind, namespace
	// and name; empty: the item as it was sent.
	Item json.RawMessage `json:"item,omitempty"`
	// AdditionalItems are other objects to back up with this one, at most
	// MaxAdditionalItems. cairn reads them as the backup's identity.
	AdditionalItems []ObjectRef `json:"additionalItems,omitempty"`
	// Error fails this item, with the message in the backup's errors; the
	// other items of the batch go on.
	Error string `json:"error,omitempty"`
	// Operation starts a long operation for this item (an export, a
	// dump, a cloud snapshot): cairn runs it as BackupOperationV1 on the
	// extension's task queue and waits for it before the backup ends.
	Operation *OperationStart `json:"operation,omitempty"`
}

// MaxAdditionalItems bounds the additional items of one answer, and the
// items to update of one operation.
const MaxAdditionalItems = 100

// OperationStart is an async operation an answer asks cairn to run.
type OperationStart struct {
	// ID names the operation among the extension's in this backup: at
	// most MaxOperationIDBytes, unique per backup.
	ID string `json:"id"`
	// ItemsToUpdate are read again once the operation completed, and
	// stored in place of what the backup collected (Velero's
	// itemsToUpdate): objects the operation changes, such as the item's
	// status.
	ItemsToUpdate []ObjectRef `json:"itemsToUpdate,omitempty"`
	// Data is passed back in the operation's request as it is, at most
	// MaxOperationDataBytes: what the operation needs, so that it keeps
	// no state of its own between the answer and the operation.
	Data json.RawMessage `json:"data,omitempty"`
}

// Bounds of an operation's ID and data.
const (
	MaxOperationIDBytes   = 200
	MaxOperationDataBytes = 64 << 10
)

// BackupOperationV1 is the activity cairn calls to run one operation an
// answer started, to its end. It should heartbeat its progress
// (OperationProgress) more often than its heartbeat timeout: a heartbeat
// is how it learns that the backup was canceled, and the details of its
// last one are where a retried attempt resumes (Temporal hands them to
// the next attempt). It is retried until the backup's item operation
// timeout; ErrTypeRefused ends it as failed at once.
const BackupOperationV1 = "cairn.extension.v1.BackupOperation"

// BackupOperationRequest is one operation to run.
type BackupOperationRequest struct {
	Backup      string          `json:"backup"`
	Extension   string          `json:"extension"`
	OperationID string          `json:"operationId"`
	Resource    Resource        `json:"resource"`
	Item        ObjectRef       `json:"item"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// BackupOperationResult is what an operation that ended well reports.
type BackupOperationResult struct {
	// Description is shown with the operation in operations.json.
	Description string `json:"description,omitempty"`
}

// OperationProgress is what an operation heartbeats: how far it is.
type OperationProgress struct {
	Done        int64  `json:"done"`
	Total       int64  `json:"total,omitempty"`
	Units       string `json:"units,omitempty"`
	Description string `json:"description,omitempty"`
}

// RestoreItemsV1 is the activity cairn calls with a batch of items a
// restore is about to create, for every extension registered for their
// type.
const RestoreItemsV1 = "cairn.extension.v1.RestoreItems"

// RestoreItemsRequest is a batch of items of one type, as the restore
// would create them (namespace mapped, resource modifiers applied), in
// restore order, bounded like a backup's (MaxBatchBytes).
type RestoreItemsRequest struct {
	Restore   string            `json:"restore"`
	Backup    string            `json:"backup"`
	Extension string            `json:"extension"`
	Resource  Resource          `json:"resource"`
	Items     []json.RawMessage `json:"items"`
	// NamespaceMapping is the restore's, backup namespace to restored
	// one: how an item's namespace in the backup is found.
	NamespaceMapping map[string]string `json:"namespaceMapping,omitempty"`
	// DryRun says the restore is a dry run: nothing is created, no
	// operation runs and no item waits, so the extension should change
	// nothing of its own either.
	DryRun bool `json:"dryRun,omitempty"`
}

// RestoreItemsResponse answers a request item by item, one answer per
// item, in order.
type RestoreItemsResponse struct {
	Items []RestoreItemAnswer `json:"items"`
}

// RestoreItemAnswer is what to do with one item.
type RestoreItemAnswer struct {
	// Item is the object to create in its place, of the same kind,
	// namespace and name; empty: the item as it was sent.
	Item json.RawMessage `json:"item,omitempty"`
	// Skip leaves the item out of the restore, with this reason.
	Skip string `json:"skip,omitempty"`
	// Error fails this item, with the message in the restore's results.
	Error string `json:"error,omitempty"`
	// Operation starts a long operation for this item once it is
	// restored (an import, a data load): cairn runs it as
	// RestoreOperationV1 on the extension's task queue after every item
	// of the restore is created, and waits for it before the restore
	// ends. An item not restored (it failed, or existed) starts none.
	// ItemsToUpdate is for backups only.
	Operation *OperationStart `json:"operation,omitempty"`
	// AdditionalItems are objects to restore before this item, named as
	// restored (their namespace mapped), at most MaxAdditionalItems:
	// each is taken from the restore's own items, with its type's rules
	// and extensions, and created ahead of its type's turn; its outcome
	// is counted once, with its type. One the restore does not hold
	// (not in the backup, or left out by its filters) must exist in the
	// cluster already. The item fails when one is not there after that.
	// Add it to WaitFor too to wait until it is ready. A dry run
	// restores nothing ahead.
	AdditionalItems []ObjectRef `json:"additionalItems,omitempty"`
	// WaitFor holds the item back until other objects are ready: cairn
	// creates it only then, and fails it when they are not ready in time.
	WaitFor *WaitFor `json:"waitFor,omitempty"`
}

// WaitFor names objects an item waits for, as restored (their namespace
// mapped), and how long it may wait. An object is ready when it exists
// and Kubernetes' own status says so (kstatus "Current": a claim Bound, a
// Deployment available, a custom resource whose Ready condition is True,
// a ConfigMap as soon as it exists); one whose status says it failed
// fails the item at once. cairn reads them as the restore's identity.
type WaitFor struct {
	// Items are at most MaxAdditionalItems objects.
	Items []ObjectRef `json:"items"`
	// Timeout is a duration ("30s", "5m"), at most MaxWaitTimeout;
	// empty: DefaultWaitTimeout.
	Timeout string `json:"timeout,omitempty"`
}

// Bounds of a wait.
const (
	DefaultWaitTimeout = 10 * time.Minute
	MaxWaitTimeout     = time.Hour
)

// WaitTimeout is how long the wait may take, or why its Timeout is
// wrong.
func (w WaitFor) WaitTimeout() (time.Duration, error) {
	if w.Timeout == "" {
		return DefaultWaitTimeout, nil
	}
	d, err := time.ParseDuration(w.Timeout)
	switch {
	case err != nil:
		return 0, fmt.Errorf("wait timeout %q is not a duration such as 30s or 5m", w.Timeout)
	case d <= 0 || d > MaxWaitTimeout:
		return 0, fmt.Errorf("wait timeout %s is not between 0 and %s", d, MaxWaitTimeout)
	}
	return d, nil
}

// RestoreOperationV1 is the activity cairn calls to run one operation a
// restore answer started, to its end; like BackupOperationV1 it
// heartbeats OperationProgress, resumes from the last heartbeat's
// details, and is retried until the restore's item operation timeout.
const RestoreOperationV1 = "cairn.extension.v1.RestoreOperation"

// RestoreOperationRequest is one restore operation to run. Item is the
// object as restored (its namespace mapped).
type RestoreOperationRequest struct {
	Restore     string          `json:"restore"`
	Backup      string          `json:"backup"`
	Extension   string          `json:"extension"`
	OperationID string          `json:"operationId"`
	Resource    Resource        `json:"resource"`
	Item        ObjectRef       `json:"item"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// RestoreOperationResult is what a restore operation that ended well
// reports.
type RestoreOperationResult struct {
	// Description is shown with the operation in the restore's
	// operations.json.
	Description string `json:"description,omitempty"`
}

// DeleteItemsV1 is the activity cairn calls, when a backup is deleted,
// with a batch of the items it holds of a type an extension is registered
// to delete for: to delete what the extension made for them outside the
// backup (an export, an external snapshot). It must be idempotent: a
// retried deletion calls it again for the same items.
const DeleteItemsV1 = "cairn.extension.v1.DeleteItems"

// DeleteItemsRequest is a batch of one type's items as the backup holds
// them, bounded like a backup's (MaxBatchBytes).
type DeleteItemsRequest struct {
	Backup    string            `json:"backup"`
	Extension string            `json:"extension"`
	Resource  Resource          `json:"resource"`
	Items     []json.RawMessage `json:"items"`
}

// DeleteItemsResponse answers a request item by item, one answer per
// item, in order.
type DeleteItemsResponse struct {
	Items []DeleteItemAnswer `json:"items"`
}

// DeleteItemAnswer is how deleting for one item went: an Error keeps the
// backup (its deletion fails with the message), so nothing the extension
// made is orphaned; empty, all is deleted.
type DeleteItemAnswer struct {
	Error string `json:"error,omitempty"`
}
