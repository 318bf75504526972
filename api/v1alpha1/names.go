// Package v1alpha1 is cairn's data model, the contract every cairn process
// shares: the types that cross a process or storage boundary (specs,
// statuses, activity inputs and results, backup.json and the other files
// of a location), workflow names and IDs, and the typed errors. It holds
// no workflow code; the workflows live in one package per domain under
// workflows/, and a domain imports no other.
package v1alpha1

import (
	"strings"
	"time"
)

// TaskQueue is the queue of every workflow and cluster-side activity.
const TaskQueue = "cairn"

// Workflow type names as registered with the worker: every one of them.
const (
	BackupWorkflowName          = "Backup"
	RestoreWorkflowName         = "Restore"
	DeleteBackupWorkflowName    = "DeleteBackup"
	ExpireBackupsWorkflowName   = "ExpireBackups"
	ValidateFiltersWorkflowName = "ValidateFilters"
	ScheduledBackupWorkflowName = "ScheduledBackup"
	EtcdSnapshotWorkflowName    = "EtcdSnapshot"
	VolumeSnapshotWorkflowName  = "VolumeSnapshot"
	// PodVolumeBackupWorkflowName copies one pod volume from its node
	// into the location's kopia repository.
	PodVolumeBackupWorkflowName = "PodVolumeBackup"
	// PodVolumeRestoreWorkflowName writes one pod volume's copy into the
	// restored pod, on the node where it waits for it.
	PodVolumeRestoreWorkflowName = "PodVolumeRestore"
	// BackupDryRunWorkflowName plans and lists what a backup would take
	// under a scratch name, reports it and removes the scratch data.
	BackupDryRunWorkflowName = "BackupDryRun"
	// RestoreDryRunWorkflowName plans a restore and asks the API server
	// what each write would do, persisting nothing.
	RestoreDryRunWorkflowName = "RestoreDryRun"
	// VerifyBackupWorkflowName re-reads a backup and checks every stored
	// object against its manifest.
	VerifyBackupWorkflowName = "VerifyBackup"
	// ApplyRetentionWorkflowName applies a schedule's retention a page at
	// a time, as a child of the scheduled run.
	ApplyRetentionWorkflowName = "ApplyRetention"
	// VolumeRestoreWorkflowName restores one claim's moved data.
	VolumeRestoreWorkflowName         = "VolumeRestore"
	RepositoryMaintenanceWorkflowName = "RepositoryMaintenance"
	// DataMoverSlotsWorkflowName holds one node's queue of data movers.
	DataMoverSlotsWorkflowName = "DataMoverSlots"
	// ExtensionCallWorkflowName runs one call of an extension's activity
	// on the extension's task queue.
	ExtensionCallWorkflowName = "ExtensionCall"
	// ExtensionOperationWorkflowName runs one async operation an
	// extension started, on the extension's task queue.
	ExtensionOperationWorkflowName = "ExtensionOperation"
)

// QueryStatus is the query every cairn workflow answers with its status.
const QueryStatus = "status"

// Kinds of cairn workflow, as stored in the CairnKind search attribute.
const (
	KindBackup   = "backup"
	KindRestore  = "restore"
	KindDeletion = "deletion"
	// KindScheduledRun is the workflow a schedule starts: it runs one
	// backup as its child, then the schedule's retention.
	KindScheduledRun = "scheduled-run"
	// KindVolumeSnapshot is the child workflow of one volume's snapshot.
	KindVolumeSnapshot = "volume-snapshot"
	// KindBackupDryRun is a backup's dry run: listings of backups leave
	// it out.
	KindBackupDryRun = "backup-dry-run"
	// KindRestoreDryRun is a restore's dry run.
	KindRestoreDryRun = "restore-dry-run"
	KindVerify        = "verify"
	// KindVolumeRestore is the child workflow of one volume's restore.
	KindVolumeRestore  = "volume-restore"
	KindMaintenance    = "maintenance"
	KindDataMoverSlots = "datamover-slots"
	KindEtcdSnapshot   = "etcd-snapshot"
	KindExtensionCall  = "extension-call"
	// KindExtensionOperation is the workflow of one operation an
	// extension started.
	KindExtensionOperation = "extension-operation"
	// KindSchedule marks cairn's backup schedules among a namespace's
	// Temporal Schedules.
	KindSchedule = "schedule"
)

// BackupWorkflowID is the workflow ID of the backup called name; one name
// is one workflow, which makes a repeated create idempotent.
func BackupWorkflowID(name string) string { return "backup/" + name }

// BackupDryRunWorkflowID is the ID of one dry run of the backup called
// name; nonce tells dry runs of one name apart.
func BackupDryRunWorkflowID(name, nonce string) string { return "dry-run/backup/" + name + "/" + nonce }

// RestoreDryRunWorkflowID is the ID of one dry run of the restore called
// name.
func RestoreDryRunWorkflowID(name, nonce string) string {
	return "dry-run/restore/" + name + "/" + nonce
}

// DeleteWorkflowID is the workflow ID of the deletion of the backup called
// name: one deletion at a time per backup.
func DeleteWorkflowID(name string) string { return "delete/" + name }

// DeleteEtcdWorkflowID is the workflow ID of the deletion of the etcd
// snapshot called name.
func DeleteEtcdWorkflowID(name string) string { return "delete/etcd/" + name }

// RetentionWorkflowID is the ApplyRetention child of the scheduled run
// whose backup (or etcd snapshot) is name.
func RetentionWorkflowID(name string) string { return "retention/" + name }

// ExpireScheduleID is the Temporal Schedule that deletes expired backups.
const ExpireScheduleID = "cairn-expire-backups"

// LocationScheduleID is the ID of one location's schedule of kind base
// (ExpireScheduleID, MaintenanceScheduleID): base itself for the default
// location, base-<location> for the others.
func LocationScheduleID(base, location string) string {
	if location == "" || location == "default" {
		return base
	}
	return base + "-" + location
}

// ScheduleID is the Temporal Schedule of the backup schedule called name.
func ScheduleID(name string) string { return "schedule/" + name }

// ScheduleNameOf is the backup schedule a Temporal Schedule ID belongs
// to, and whether it is one of cairn's backup schedules.
func ScheduleNameOf(id string) (string, bool) {
	name, ok := strings.CutPrefix(id, "schedule/")
	return name, ok && name != ""
}

// ScheduledRunWorkflowID is the ID a schedule's action starts its runs
// under; Temporal appends the due time to it.
func ScheduledRunWorkflowID(schedule string) string { return "scheduled/" + schedule }

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
	// ErrTypeCorruptBackup: the backup's files cannot be read, or are past
	// the limits they are read under.
	ErrTypeCorruptBackup = "CorruptBackup"
	// ErrTypeBackupConflict: the location already holds a committed
	// backup of that name that another run wrote.
	ErrTypeBackupConflict = "BackupConflict"
	// ErrTypeImmutable: the backup is under object lock; it cannot be
	// deleted before the lock ends.
	ErrTypeImmutable = "Immutable"
	// ErrTypeUnsupportedFormat: the backup is of a format version this
	// cairn does not know.
	ErrTypeUnsupportedFormat = "UnsupportedFormat"
	// ErrTypeEncryptionKey: the backup is encrypted and the worker has no
	// key, or not the one it was written with.
	ErrTypeEncryptionKey = "EncryptionKey"
	// ErrTypeEtcdNotConfigured: the worker was given no etcd endpoints.
	ErrTypeEtcdNotConfigured = "EtcdNotConfigured"
	// ErrTypeSnapshotAPIMissing: the backup has CSI volumes to snapshot
	// but the cluster serves no snapshot.storage.k8s.io/v1 API.
	ErrTypeSnapshotAPIMissing = "SnapshotAPIMissing"
	// ErrTypeSnapshotFailed: the CSI driver or snapshot controller
	// reported an error on a snapshot.
	ErrTypeSnapshotFailed = "SnapshotFailed"
	// ErrTypeForbidden: the identity the run acts as may not start it
	// (a schedule's setter whose rights were revoked since).
	ErrTypeForbidden = "Forbidden"
	// ErrTypeExtension: an extension refused a call, answered out of its
	// contract, or did not answer within its registration's timeout.
	ErrTypeExtension = "ExtensionFailed"
)

// ErrTypeActivityStopped is the one retryable error type: a step stopped
// because its heartbeats to Temporal kept failing, not because its run
// was canceled. The next attempt carries on.
const ErrTypeActivityStopped = "ActivityStopped"

// Memo keys set when a backup starts: the spec's hash (to tell a repeated
// request from a conflicting one) and its location (to find its files
// while it runs).
const (
	MemoSpecHash = "specHash"
	MemoLocation = "location"
	// MemoBackup is the backup a restore reads.
	MemoBackup = "backup"
	// MemoActingAs is the Identity a backup or restore acts as (absent:
	// the worker), shown on the run's page in the Temporal UI.
	MemoActingAs = "actingAs"
)

// DefaultHeartbeatTimeout is how long a silent activity is presumed alive;
// after it, Temporal retries it on another worker.
const DefaultHeartbeatTimeout = 30 * time.Second
