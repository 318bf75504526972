// Package workflows holds cairn's deterministic workflow code and the types
// that cross the workflow boundary. Activities are called by name, so this
// package does not import their implementations.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
)

// TaskQueue is the queue of every workflow and cluster-side activity.
const TaskQueue = "cairn"

// Workflow type names as registered with the worker.
const (
	BackupWorkflowName          = "Backup"
	RestoreWorkflowName         = "Restore"
	DeleteBackupWorkflowName    = "DeleteBackup"
	ExpireBackupsWorkflowName   = "ExpireBackups"
	ValidateFiltersWorkflowName = "ValidateFilters"
)

// QueryStatus is the query every cairn workflow answers with its status.
const QueryStatus = "status"

// Activity names.
const (
	PlanBackupActivity       = "PlanBackup"
	CollectActivity          = "CollectResources"
	CollectRelatedActivity   = "CollectRelated"
	FinalizeBackupActivity   = "FinalizeBackup"
	CleanupBackupActivity    = "CleanupBackupWork"
	UnknownResourcesActivity = "UnknownResources"

	PlanRestoreActivity     = "PlanRestore"
	ApplyActivity           = "ApplyResources"
	WaitCRDsActivity        = "WaitCRDsEstablished"
	RelinkOwnersActivity    = "RelinkOwners"
	FinalizeRestoreActivity = "FinalizeRestore"
	CleanupRestoreActivity  = "CleanupRestoreWork"

	DeleteBackupDataActivity   = "DeleteBackupData"
	ListExpiredBackupsActivity = "ListExpiredBackups"
)

// Kinds of cairn workflow, as stored in the CairnKind search attribute.
const (
	KindBackup   = "backup"
	KindRestore  = "restore"
	KindDeletion = "deletion"
)

// Typed search attributes, registered on the namespace at start-up so the
// Temporal UI can filter, for example: CairnKind="backup" AND CairnPhase="Failed".
var (
	SearchAttrKind     = temporal.NewSearchAttributeKeyKeyword("CairnKind")
	SearchAttrName     = temporal.NewSearchAttributeKeyKeyword("CairnName")
	SearchAttrPhase    = temporal.NewSearchAttributeKeyKeyword("CairnPhase")
	SearchAttrSchedule = temporal.NewSearchAttributeKeyKeyword("CairnSchedule")
)

// SearchAttributeNames lists the custom keyword attributes cairn uses.
func SearchAttributeNames() []string {
	return []string{SearchAttrKind.GetName(), SearchAttrName.GetName(), SearchAttrPhase.GetName(), SearchAttrSchedule.GetName()}
}

// BackupWorkflowID is the workflow ID of the backup called name; one name
// is one workflow, which makes a repeated create idempotent.
func BackupWorkflowID(name string) string { return "backup/" + name }

// DeleteWorkflowID is the workflow ID of the deletion of the backup called
// name: one deletion at a time per backup.
func DeleteWorkflowID(name string) string { return "delete/" + name }

// ExpireScheduleID is the Temporal Schedule that deletes expired backups.
const ExpireScheduleID = "cairn-expire-backups"

// RestoreWorkflowID is the workflow ID of the restore called name.
func RestoreWorkflowID(name string) string { return "restore/" + name }

// Error types of non-retryable application errors. A client matches on
// them; the message says what to do.
const (
	ErrTypeInvalidSpec        = "InvalidSpec"
	ErrTypeClusterUnreachable = "ClusterUnreachable"
	ErrTypeLocation           = "LocationUnavailable"
	// ErrTypeBackupNotFound: the backup a restore names is not in the location.
	ErrTypeBackupNotFound = "BackupNotFound"
	// ErrTypeBackupNotReady: the backup is still running, or ended Failed.
	ErrTypeBackupNotReady = "BackupNotReady"
	// ErrTypeCorruptBackup: the backup's files cannot be read.
	ErrTypeCorruptBackup = "CorruptBackup"
)

// Memo keys set when a backup starts: the spec's hash (to tell a repeated
// request from a conflicting one) and its location (to find its files
// while it runs).
const (
	MemoSpecHash = "specHash"
	MemoLocation = "location"
	// MemoBackup is the backup a restore reads.
	MemoBackup = "backup"
)

// defaultHeartbeatTimeout is how long a silent activity is presumed alive;
// after it, Temporal retries it on another worker.
const defaultHeartbeatTimeout = 30 * time.Second
