package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Defaults of the data mover's timeouts.
const (
	// DefaultDataMoverPrepareTimeout bounds how long a data mover may take
	// to start (claim bound, pod scheduled, process polling).
	DefaultDataMoverPrepareTimeout = 30 * time.Minute
	// DefaultDataMoverTimeout bounds one volume's data movement, every
	// attempt included.
	DefaultDataMoverTimeout = 4 * time.Hour
)

// OperationKindDataUpload is a CSI snapshot whose data is then moved into
// the location's kopia repository.
const OperationKindDataUpload = "DataUpload"

// Error types of data movement.
const (
	// ErrTypeRepositoryPassword: the repository password is missing or does
	// not open the location's repository.
	ErrTypeRepositoryPassword = "RepositoryPassword"
	// ErrTypeDataMoverNotStarted: no data mover started within the prepare
	// timeout, or its pod can never start (its image cannot be pulled);
	// the message says what the exposer saw.
	ErrTypeDataMoverNotStarted = "DataMoverNotStarted"
	// ErrTypeDataMoverTimeout: the data was not moved within the
	// operation's timeout.
	ErrTypeDataMoverTimeout = "DataMoverTimeout"
	// ErrTypeDataMoverFailed: every data mover the operation may start
	// failed; the message holds the last one's reason.
	ErrTypeDataMoverFailed = "DataMoverFailed"
	// ErrTypeVolumeDataMissing: the repository or the kopia snapshot a
	// restore needs is not in the location.
	ErrTypeVolumeDataMissing = "VolumeDataMissing"
	// ErrTypeNoSpace: the volume's file system cannot hold the data.
	ErrTypeNoSpace = "NoSpace"
	// ErrTypeMaintenanceOwner: another kopia client owns the repository's
	// maintenance.
	ErrTypeMaintenanceOwner = "MaintenanceOwner"
)

// ExposeMode says what a data mover does with the volume it is given.
type ExposeMode string

const (
	// ExposeBackup mounts a claim created from the backup's snapshot
	// read-only and uploads it.
	ExposeBackup ExposeMode = "backup"
	// ExposeRestore mounts a fresh claim read-write and restores into it.
	ExposeRestore ExposeMode = "restore"
	// ExposeFSBackup mounts a running pod's volume directory on its node,
	// read-only.
	ExposeFSBackup ExposeMode = "fs-backup"
	// ExposeFSRestore mounts a restored pod's volume directory on its
	// node, and the directory where that pod's init container waits for
	// the volume's marker, read-write.
	ExposeFSRestore ExposeMode = "fs-restore"
)

// ExposeInput asks the worker's exposer to make a volume's data reachable
// and start a data mover polling TaskQueue next to it. It is idempotent
// per (TaskQueue, Attempt): a data mover already running for the attempt
// is kept.
type ExposeInput struct {
	// Owner is the backup (or restore) the data mover works for.
	Owner    string     `json:"owner"`
	Location string     `json:"location"`
	Mode     ExposeMode `json:"mode"`
	Volume   Volume     `json:"volume"`
	// Snapshot is the VolumeSnapshot to expose (backup mode), in the
	// volume's namespace, and its restore size in bytes.
	Snapshot     string `json:"snapshot,omitempty"`
	SnapshotSize int64  `json:"snapshotSize,omitempty"`
	// AccessModes the new volume needs (restore mode): those of the
	// backed-up claim, so the target claim can bind to it.
	AccessModes []string `json:"accessModes,omitempty"`
	TaskQueue   string   `json:"taskQueue"`
	// Attempt numbers the data movers of one operation from 1: each
	// attempt gets a fresh one.
	Attempt int `json:"attempt"`
}

// ExposeResult says where the data mover runs.
type ExposeResult struct {
	// Claim is the temporary claim holding the exposed volume.
	Claim string `json:"claim"`
	// DataMover names the pod or process (with its PID).
	DataMover string `json:"dataMover"`
	Node      string `json:"node,omitempty"`
}

// DiagnoseResult says why a data mover did not start.
type DiagnoseResult struct {
	Reason string `json:"reason"`
}

// StartWatchResult is what watching a data mover until it runs found:
// that it runs, or why it never will as it is.
type StartWatchResult struct {
	// Running: its process runs; whether it takes its task is for the
	// task to tell.
	Running bool `json:"running,omitempty"`
	// Never says why it cannot start: an image the node cannot pull, a
	// pod or process that ended, or was deleted, before it ran.
	Never string `json:"never,omitempty"`
	// Retry: a new data mover may start where this one did not (it
	// ended or went away; an image that cannot be pulled stays so).
	Retry bool `json:"retry,omitempty"`
}

// UploadVolumeInput is the data mover's upload of one exposed volume.
type UploadVolumeInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	Volume   Volume `json:"volume"`
	// OperationID names the operation in the data mover's log.
	OperationID string `json:"operationId"`
}

// DataUploadInfo is what moving a volume's data recorded.
type DataUploadInfo struct {
	// SnapshotID is the kopia snapshot in the location's repository.
	SnapshotID string `json:"snapshotId"`
	// ParentID is the earlier snapshot of the volume it was incremental to.
	ParentID      string        `json:"parentId,omitempty"`
	Bytes         int64         `json:"bytes"`
	Files         int64         `json:"files"`
	HashedBytes   int64         `json:"hashedBytes"`
	CachedBytes   int64         `json:"cachedBytes"`
	UploadedBytes int64         `json:"uploadedBytes"`
	Duration      time.Duration `json:"duration"`
	// Attempts counts the data movers it took.
	Attempts  int    `json:"attempts,omitempty"`
	DataMover string `json:"dataMover,omitempty"`
	Node      string `json:"node,omitempty"`
}

// DataMoverTaskQueue is the task queue of one volume operation's data
// movers. It is unique to the operation, so only a data mover that has
// that volume mounted takes its work.
func DataMoverTaskQueue(owner string, v Volume) string {
	id := owner + "\x00" + v.Namespace + "\x00" + v.Claim
	if v.PodVolume != nil {
		id += "\x00" + v.PodVolume.Pod + "\x00" + v.PodVolume.Volume
	}
	sum := sha256.Sum256([]byte(id))
	return "cairn-datamover-" + hex.EncodeToString(sum[:10])
}

// EnsureRepositoryInput makes sure the location holds a kopia repository
// before the backup's data movers connect to it.
type EnsureRepositoryInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
}

// DeleteVolumeDataInput deletes the kopia snapshots of a backup's volumes.
type DeleteVolumeDataInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
}

// DeleteVolumeDataResult counts them.
type DeleteVolumeDataResult struct {
	Snapshots int `json:"snapshots"`
}

// MoverProgress is the part of a data mover's heartbeat details that a
// view of its backup or restore shows. Data movers report progress only
// in their heartbeat, never by signal, so a move of any length adds no
// event to a history; the starter reads it from the pending activity.
type MoverProgress struct {
	Progress string `json:"progress"`
}
