package v1alpha1

import (
	"fmt"
	"time"
)

// NativeSnapshots says what becomes of a volume's CSI snapshot once the
// backup is done with it.
//
// +kubebuilder:validation:Enum=keep;keep-newest;delete
type NativeSnapshots string

const (
	// NativeSnapshotsKeep keeps every native snapshot for as long as its
	// backup exists: a snapshot-only backup (the default).
	NativeSnapshotsKeep NativeSnapshots = "keep"
	// NativeSnapshotsKeepNewest keeps the newest N native snapshots per
	// volume (N from the worker's settings, per CSI driver); before a new
	// one is cut, the oldest kept snapshot of a completed backup goes.
	NativeSnapshotsKeepNewest NativeSnapshots = "keep-newest"
	// NativeSnapshotsDelete deletes the native snapshot once its data is
	// moved into the repository. It needs data movement.
	NativeSnapshotsDelete NativeSnapshots = "delete"
)

// DefaultCSISnapshotTimeout bounds the wait for a snapshot to be ready.
const DefaultCSISnapshotTimeout = 10 * time.Minute

// OperationPhase is where one async operation of a backup stands.
type OperationPhase string

const (
	OperationNew        OperationPhase = "New"
	OperationInProgress OperationPhase = "InProgress"
	OperationCompleted  OperationPhase = "Completed"
	OperationFailed     OperationPhase = "Failed"
	OperationCanceled   OperationPhase = "Canceled"
)

// Done reports whether the operation has ended.
func (p OperationPhase) Done() bool {
	return p == OperationCompleted || p == OperationFailed || p == OperationCanceled
}

// OperationKindCSISnapshot is a CSI volume snapshot of one claim.
const OperationKindCSISnapshot = "CSISnapshot"

// Volume is one claim whose volume a backup snapshots, as the volume plan
// found it. A list of them crosses the workflow boundary: one entry per
// volume, never per item.
type Volume struct {
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	// PersistentVolume is the bound volume's name: the volume's identity.
	PersistentVolume string `json:"persistentVolume"`
	Driver           string `json:"driver"`
	VolumeHandle     string `json:"volumeHandle"`
	SnapshotClass    string `json:"snapshotClass"`
	// StorageClass is the claim's; a data mover's claims use it too.
	StorageClass string `json:"storageClass,omitempty"`
	// PodVolume is set for a volume copied from its pod's directory on
	// the node (a file-system backup) instead of snapshotted; Claim is
	// then the claim behind it, if any.
	PodVolume *PodVolume `json:"podVolume,omitempty"`
}

// Key is "namespace/claim", or "namespace/pod/volume" for a pod volume
// (claim names hold no "/", so the two never meet).
func (v Volume) Key() string {
	if v.PodVolume != nil {
		return v.Namespace + "/" + v.PodVolume.Pod + "/" + v.PodVolume.Volume
	}
	return v.Namespace + "/" + v.Claim
}

// Operation is one async operation of a backup: its volume's snapshot,
// or an operation an extension started for an item, with its phase,
// progress, times and, once ready, what was recorded. operations.json and
// the status query list them.
type Operation struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Volume is a volume operation's claim; Extension and Item say whose
	// and for which item an extension's operation is.
	Volume    Volume         `json:"volume,omitzero"`
	Extension string         `json:"extension,omitempty"`
	Item      *ItemRef       `json:"item,omitempty"`
	Phase     OperationPhase `json:"phase"`
	Progress  string         `json:"progress,omitempty"`
	Started   *time.Time     `json:"started,omitempty"`
	Updated   *time.Time     `json:"updated,omitempty"`
	Timeout   time.Duration  `json:"timeout"`
	Error     string         `json:"error,omitempty"`
	Snapshot  *SnapshotInfo  `json:"snapshot,omitempty"`
	// Upload is set once the volume's data is in the kopia repository.
	Upload     *DataUploadInfo `json:"upload,omitempty"`
	WorkflowID string          `json:"workflowId,omitempty"`
}

// SnapshotInfo is what a ready CSI snapshot recorded.
type SnapshotInfo struct {
	// Name of the VolumeSnapshot, in the claim's namespace; it is also the
	// snapshot's cairn.io/snapshot-alias-name.
	Name string `json:"name"`
	// Content is the VolumeSnapshotContent it is bound to.
	Content string `json:"content"`
	// Handle is the CSI driver's snapshot ID.
	Handle       string     `json:"handle"`
	SizeBytes    int64      `json:"sizeBytes,omitempty"`
	RestoreBytes int64      `json:"restoreBytes,omitempty"`
	ReadyTime    *time.Time `json:"readyTime,omitempty"`
	// Pruned lists kept snapshots of older backups that were deleted to
	// keep the newest N (keep-newest mode).
	Pruned []string `json:"pruned,omitempty"`
	// Deleted says the snapshot was deleted once its data was moved
	// (nativeSnapshots: delete); the kopia snapshot is the backup's copy.
	Deleted bool `json:"deleted,omitempty"`
}

// VolumeRecord is one entry of volumes.json.
type VolumeRecord struct {
	Volume   Volume          `json:"volume"`
	Phase    OperationPhase  `json:"phase"`
	Snapshot *SnapshotInfo   `json:"snapshot,omitempty"`
	Upload   *DataUploadInfo `json:"upload,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// VolumesFile is volumes.json.
type VolumesFile struct {
	Volumes []VolumeRecord `json:"volumes"`
}

// OperationsFile is operations.json.
type OperationsFile struct {
	Operations []Operation `json:"operations"`
}

// PlanVolumesInput asks which claims of a planned backup to snapshot.
type PlanVolumesInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	// ActingAs lists the claims: only those the run's caller may list are
	// snapshotted (nil: the worker).
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// PlanVolumesResult lists the volumes to snapshot. Claims left out are
// warnings in results.json, counted here.
type PlanVolumesResult struct {
	Volumes []Volume `json:"volumes"`
	// PodVolumes are copied from their pods' directories on the nodes.
	PodVolumes []Volume `json:"podVolumes,omitempty"`
	Warnings   int      `json:"warnings"`
}

// VolumeSnapshotRequest is the input of the per-volume child workflow.
type VolumeSnapshotRequest struct {
	Backup           string          `json:"backup"`
	Location         string          `json:"location"`
	OperationID      string          `json:"operationId"`
	Volume           Volume          `json:"volume"`
	Timeout          time.Duration   `json:"timeout"`
	NativeSnapshots  NativeSnapshots `json:"nativeSnapshots"`
	HeartbeatTimeout time.Duration   `json:"heartbeatTimeout"`
	// MoveData moves the ready snapshot's data into the kopia repository,
	// with a data mover that must start within PrepareTimeout and finish
	// within DataTimeout.
	MoveData       bool          `json:"moveData,omitempty"`
	PrepareTimeout time.Duration `json:"prepareTimeout,omitempty"`
	DataTimeout    time.Duration `json:"dataTimeout,omitempty"`
}

// VolumeSnapshotResult is what the child workflow reports.
type VolumeSnapshotResult struct {
	Phase    OperationPhase  `json:"phase"`
	Error    string          `json:"error,omitempty"`
	Snapshot *SnapshotInfo   `json:"snapshot,omitempty"`
	Upload   *DataUploadInfo `json:"upload,omitempty"`
}

// CreateSnapshotInput creates (or finds) the VolumeSnapshot of a volume.
type CreateSnapshotInput struct {
	Backup          string          `json:"backup"`
	Location        string          `json:"location"`
	Volume          Volume          `json:"volume"`
	NativeSnapshots NativeSnapshots `json:"nativeSnapshots"`
}

// CreateSnapshotResult names the snapshot and lists what was pruned.
type CreateSnapshotResult struct {
	Name   string   `json:"name"`
	Pruned []string `json:"pruned,omitempty"`
}

// WaitSnapshotInput waits for a VolumeSnapshot to be ready.
type WaitSnapshotInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	Volume   Volume `json:"volume"`
	Name     string `json:"name"`
}

// RemoveSnapshotInput deletes a snapshot that did not make it, and waits
// until the driver has deleted it too.
type RemoveSnapshotInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	Volume   Volume `json:"volume"`
	Name     string `json:"name"`
}

// CollectSnapshotsInput asks finalize's first step to store the final
// state of the ready snapshots and their contents as backup items.
type CollectSnapshotsInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	// Operations are the completed ones, each with its snapshot.
	Operations []Operation `json:"operations"`
}

// CollectSnapshotsResult counts the items stored per type.
type CollectSnapshotsResult struct {
	Resources map[string]int `json:"resources"`
}

// DeleteSnapshotsInput deletes every native snapshot a backup kept.
type DeleteSnapshotsInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
}

// DeleteSnapshotsResult counts them.
type DeleteSnapshotsResult struct {
	Deleted int `json:"deleted"`
}

// VolumeOperationID is the ID of the snapshot operation of a claim, or
// of the file-system copy of a pod volume.
func VolumeOperationID(v Volume) string {
	if v.PodVolume != nil {
		return "fs-backup/" + v.Key()
	}
	return fmt.Sprintf("snapshot/%s/%s", v.Namespace, v.Claim)
}

// VolumeWorkflowID is the child workflow of a claim's snapshot, or of a
// pod volume's copy, in a backup.
func VolumeWorkflowID(backup string, v Volume) string {
	if v.PodVolume != nil {
		return fmt.Sprintf("backup/%s/podvolume/%s", backup, v.Key())
	}
	return fmt.Sprintf("backup/%s/volume/%s/%s", backup, v.Namespace, v.Claim)
}
