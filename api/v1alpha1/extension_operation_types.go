package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperationKindExtension is an async operation an extension started for
// one item of a backup.
const OperationKindExtension = "ExtensionOperation"

// DefaultItemOperationTimeout bounds an extension's operation, as
// Velero's item operation timeout does.
const DefaultItemOperationTimeout = 4 * time.Hour

// ItemRef names one object of a backup: its group-resource, namespace
// ("" when cluster-scoped) and name.
type ItemRef struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String names the object as kubectl does: its type, then
// namespace/name.
func (r ItemRef) String() string {
	if r.Namespace == "" {
		return r.Resource + " " + r.Name
	}
	return r.Resource + " " + r.Namespace + "/" + r.Name
}

// ExtensionOperationInput runs one operation an extension started, as a
// workflow of its own (ExtensionOperation) that the backup's operations
// step starts and waits for: its progress and retries are in that
// workflow's history, not in the backup's.
type ExtensionOperationInput struct {
	Backup string `json:"backup"`
	// Restore is set for an operation of a restore, which runs
	// RestoreOperationV1 instead of BackupOperationV1.
	Restore   string `json:"restore,omitempty"`
	Extension string `json:"extension"`
	TaskQueue string `json:"taskQueue"`
	// Timeout bounds the operation, retries and the wait for a worker
	// included; HeartbeatTimeout the silence between two heartbeats.
	Timeout          metav1.Duration `json:"timeout"`
	HeartbeatTimeout metav1.Duration `json:"heartbeatTimeout"`
	// Request is the extension.BackupOperationRequest (or
	// RestoreOperationRequest), as JSON.
	Request json.RawMessage `json:"request"`
}

// ExtensionOperationWorkflowID is the workflow of one operation: the
// backup, the extension and a digest of the extension's operation ID
// (which may hold any characters).
func ExtensionOperationWorkflowID(backup, extension, operationID string) string {
	sum := sha256.Sum256([]byte(operationID))
	return "backup/" + backup + "/operation/" + extension + "/" + hex.EncodeToString(sum[:10])
}

// RunName is the backup or restore the operation belongs to.
func (in ExtensionOperationInput) RunName() string {
	if in.Restore != "" {
		return in.Restore
	}
	return in.Backup
}

// RestoreOperationWorkflowID is the workflow of one operation of a
// restore, named as a backup's.
func RestoreOperationWorkflowID(restore, extension, operationID string) string {
	sum := sha256.Sum256([]byte(operationID))
	return "restore/" + restore + "/operation/" + extension + "/" + hex.EncodeToString(sum[:10])
}

// RunRestoreOperationsInput asks to run the operations extensions started
// for a restore's items, and wait for them.
type RunRestoreOperationsInput struct {
	Restore  string         `json:"restore"`
	Backup   string         `json:"backup"`
	Location string         `json:"location"`
	Options  RestoreOptions `json:"options"`
	// Timeout bounds each operation (the restore's item operation
	// timeout).
	Timeout time.Duration `json:"timeout"`
}

// RunRestoreOperationsResult is how a restore's operations ended.
type RunRestoreOperationsResult struct {
	Operations OperationCounts `json:"operations"`
	// FirstError is the first failed operation's, for the restore's
	// reason.
	FirstError string `json:"firstError,omitempty"`
}

// RunOperationsInput asks to run the operations extensions started
// during a backup's collection, wait for them, and read again the items
// they update.
type RunOperationsInput struct {
	Backup   string        `json:"backup"`
	Location string        `json:"location"`
	Options  BackupOptions `json:"options"`
	// Timeout bounds each operation (the backup's item operation timeout).
	Timeout time.Duration `json:"timeout"`
}

// OperationCounts counts a backup's extension operations by how they
// ended: one entry in the backup's status whatever their number.
type OperationCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled,omitempty"`
}

// Unfinished summarizes the operations that did not complete, with the
// first failure's message, for a PartiallyFailed run's reason; "" when
// all did (or there were none).
func (c *OperationCounts) Unfinished(firstError string) string {
	if c == nil || c.Failed+c.Canceled == 0 {
		return ""
	}
	msg := fmt.Sprintf("%d of %d extension operations did not complete", c.Failed+c.Canceled, c.Total)
	if firstError != "" {
		msg += ", the first: " + firstError
	}
	return msg
}

// OperationsProgress is what the step that waits for a backup's
// operations heartbeats, and describe reads of it: how many ended, and
// some of those still running.
type OperationsProgress struct {
	OperationCounts
	Waiting []ExtensionWait `json:"waiting,omitempty"`
}

// RunOperationsResult is how the operations ended, the items read again
// per type, and the warnings of that reading.
type RunOperationsResult struct {
	Operations OperationCounts `json:"operations"`
	// FirstError is the first failed operation's, for the backup's reason.
	FirstError string         `json:"firstError,omitempty"`
	Updated    map[string]int `json:"updated,omitempty"`
	Warnings   int            `json:"warnings"`
}

// CancelOperationsInput cancels the operations of a backup that ended
// early.
type CancelOperationsInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
}
