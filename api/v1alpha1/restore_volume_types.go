package v1alpha1

import (
	"fmt"
	"time"
)

// RestoreVolume is one claim of the backup whose data is restored from
// the kopia repository: the plan lists them, one entry per volume.
type RestoreVolume struct {
	// ID is "volume/<namespace>/<claim>" in the target namespace.
	ID string `json:"id"`
	// Namespace and Claim are the claim to restore, after any namespace
	// mapping; SourceNamespace is the backed-up namespace when mapped.
	Namespace       string `json:"namespace"`
	Claim           string `json:"claim"`
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	// SnapshotID is the volume's kopia snapshot; Bytes and Files what it
	// holds.
	SnapshotID string `json:"snapshotId"`
	Bytes      int64  `json:"bytes"`
	Files      int64  `json:"files"`
	// The backed-up claim's shape, which the new volume must fit.
	StorageClass string   `json:"storageClass,omitempty"`
	AccessModes  []string `json:"accessModes,omitempty"`
	SizeBytes    int64    `json:"sizeBytes"`
	// PodVolume, for a file-system copy, is the restored pod's volume it
	// is written into: Pod and Volume from the plan, UID, Node and Dir
	// once the pod waits on its node. DataName is the copy's name in the
	// repository (Volume.DataName as backed up).
	PodVolume *PodVolume `json:"podVolume,omitempty"`
	DataName  string     `json:"dataName,omitempty"`
}

// SourceKey is "namespace/claim" of the backed-up claim, or the
// namespace and DataName of a pod volume's copy: the kopia snapshot's
// volume tag.
func (v RestoreVolume) SourceKey() string {
	ns := v.Namespace
	if v.SourceNamespace != "" {
		ns = v.SourceNamespace
	}
	if v.PodVolume != nil {
		return ns + "/" + v.DataName
	}
	return ns + "/" + v.Claim
}

// Key is "namespace/claim" of the target claim, or
// "namespace/pod/volume" of a pod volume.
func (v RestoreVolume) Key() string {
	if v.PodVolume != nil {
		return v.Namespace + "/" + v.PodVolume.Pod + "/" + v.PodVolume.Volume
	}
	return v.Namespace + "/" + v.Claim
}

// Target is the target claim as a Volume, which exposing names.
func (v RestoreVolume) Target() Volume {
	return Volume{Namespace: v.Namespace, Claim: v.Claim, StorageClass: v.StorageClass}
}

// VolumeRestoreID is the ID of a target claim's volume restore.
func VolumeRestoreID(namespace, claim string) string {
	return fmt.Sprintf("volume/%s/%s", namespace, claim)
}

// VolumeRestoreWorkflowID is the child workflow of a claim's volume
// restore.
func VolumeRestoreWorkflowID(restore, namespace, claim string) string {
	return fmt.Sprintf("restore/%s/volume/%s/%s", restore, namespace, claim)
}

// RestoreOwner is a restore as the owner of data movers and their task
// queues, apart from a backup of the same name.
func RestoreOwner(restore string) string { return "restore:" + restore }

// VolumeRestoreRequest is the input of the per-volume child workflow.
type VolumeRestoreRequest struct {
	Restore          string        `json:"restore"`
	Backup           string        `json:"backup"`
	Location         string        `json:"location"`
	Volume           RestoreVolume `json:"volume"`
	PrepareTimeout   time.Duration `json:"prepareTimeout"`
	DataTimeout      time.Duration `json:"dataTimeout"`
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout"`
	// Release, for a pod volume whose restore ended before its child
	// started, is why: the child only tells the pod its data will not
	// come.
	Release string `json:"release,omitempty"`
}

// VolumeRestoreResult is what the child workflow reports.
type VolumeRestoreResult struct {
	Phase OperationPhase `json:"phase"`
	Error string         `json:"error,omitempty"`
	// PersistentVolume holds the restored data, pre-bound to the claim.
	PersistentVolume string            `json:"persistentVolume,omitempty"`
	Download         *DataDownloadInfo `json:"download,omitempty"`
}

// DataDownloadInfo is what writing a volume's data back recorded: the
// data mover's answer, with the attempts and where it ran added.
type DataDownloadInfo struct {
	Bytes int64 `json:"bytes"`
	Files int64 `json:"files"`
	// SkippedBytes were already in place: an earlier data mover wrote them.
	SkippedBytes int64         `json:"skippedBytes,omitempty"`
	Duration     time.Duration `json:"duration"`
	Attempts     int           `json:"attempts,omitempty"`
	DataMover    string        `json:"dataMover,omitempty"`
	Node         string        `json:"node,omitempty"`
}

// VolumeRestoreStatus is one volume of a restore, in its status and
// restore.json.
type VolumeRestoreStatus struct {
	RestoreVolume
	Phase    OperationPhase `json:"phase"`
	Progress string         `json:"progress,omitempty"`
	Error    string         `json:"error,omitempty"`
	// PersistentVolume holds the restored data; Bound says the claim was
	// bound to it.
	PersistentVolume string            `json:"persistentVolume,omitempty"`
	Bound            bool              `json:"bound,omitempty"`
	Download         *DataDownloadInfo `json:"download,omitempty"`
	WorkflowID       string            `json:"workflowId,omitempty"`
	Started          *time.Time        `json:"started,omitempty"`
	Updated          *time.Time        `json:"updated,omitempty"`
}

// RestoreVolumeDataInput is the data mover's restore of one snapshot
// into the volume it was given.
type RestoreVolumeDataInput struct {
	Restore    string `json:"restore"`
	Location   string `json:"location"`
	SnapshotID string `json:"snapshotId"`
	// Volume is the target claim, "namespace/claim", for the logs.
	Volume string `json:"volume"`
	// OperationID names the operation in the data mover's log.
	OperationID string `json:"operationId"`
	// Backup and SourceVolume ("namespace/claim" as backed up) are what
	// volumes.json says the snapshot holds; its kopia tags must agree.
	Backup       string `json:"backup,omitempty"`
	SourceVolume string `json:"sourceVolume,omitempty"`
	// Marker, for a pod volume, is the file the data mover writes into
	// its marker directory once the data is in place: the restored pod's
	// init container waits for it.
	Marker string `json:"marker,omitempty"`
	// Bytes the copy holds, which a pod volume's file system on its node
	// must have room for.
	Bytes int64 `json:"bytes,omitempty"`
}

// HandOverResult names the volume handed to the target claim.
type HandOverResult struct {
	PersistentVolume string `json:"persistentVolume"`
}

// ClaimBinding is a restored volume waiting for its claim.
type ClaimBinding struct {
	Namespace        string `json:"namespace"`
	Claim            string `json:"claim"`
	PersistentVolume string `json:"persistentVolume"`
}

// FinishVolumeRestoresInput waits for the restored claims to bind to
// their volumes, up to Timeout.
type FinishVolumeRestoresInput struct {
	Restore  string         `json:"restore"`
	Location string         `json:"location"`
	Bindings []ClaimBinding `json:"bindings"`
	Timeout  time.Duration  `json:"timeout"`
}

// FinishVolumeRestoresResult says, per claim "namespace/claim", why it is
// not bound to its volume; a claim missing from Unbound is bound.
type FinishVolumeRestoresResult struct {
	Unbound map[string]string `json:"unbound,omitempty"`
}
