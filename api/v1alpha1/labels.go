package v1alpha1

// Every label, annotation and finalizer cairn puts on or reads from the
// cluster's objects, in one place: what a user sees in `kubectl get -o
// yaml`, and what a selector of theirs may name. (But for the labels that
// keep an object out of a backup, cairn.io/ and velero.io/
// exclude-from-backup: internal/filter holds them, and this package
// imports it.)

// Labels put on every restored object, so `kubectl get -l` finds what a
// restore brought back and a resumed restore recognises its own work.
const (
	LabelBackup  = APIGroup + "/backup-name"
	LabelRestore = APIGroup + "/restore-name"
)

// How a claim's VolumeSnapshotClass is chosen: AnnotationSnapshotClass on
// a claim names the VolumeSnapshotClass to use for it;
// LabelSnapshotClass=true on a class makes it cairn's choice for its
// driver. Otherwise the driver's default class is used.
const (
	AnnotationSnapshotClass = APIGroup + "/snapshot-class"
	LabelSnapshotClass      = APIGroup + "/snapshot-class"
)

// Labels a backup puts on the snapshots it keeps (with LabelBackup). The
// alias is unique per snapshot (the VolumeSnapshot's name); the volume is
// the snapshotted PersistentVolume, so the kept snapshots of one volume are
// one label query away. A restored copy drops both, so it is never counted
// or pruned as one of the backup's snapshots.
const (
	LabelSnapshotAlias  = APIGroup + "/snapshot-alias-name"
	LabelSnapshotVolume = APIGroup + "/snapshot-volume-name"
)

// Labels on everything a data mover's exposer creates: the data mover it
// serves, and the backup or restore operation that owns it.
const (
	LabelDataMover = APIGroup + "/data-mover"
	LabelOwner     = APIGroup + "/owner"
)

// LabelCopiedFrom marks a Secret the worker copied into the data mover
// namespace; its value is the namespace it came from.
const LabelCopiedFrom = APIGroup + "/copied-from"

// Marks on a restored volume: the reclaim policy it had, until its claim
// binds (it is Retain meanwhile, so deleting the temporary claim keeps
// it); the data mover target it came from, so a retried hand-over finds
// it; and, while the hand-over has not finished, that target again, so
// the cleanup of an abandoned one deletes it.
const (
	AnnotationReclaimPolicy = APIGroup + "/reclaim-policy"
	LabelRestoredFrom       = APIGroup + "/restored-from"
	LabelHandOver           = APIGroup + "/hand-over"
)

// On Backup, Restore and Schedule resources.
const (
	// AnnotationActingAs holds, as JSON, the Identity a resource acts as:
	// its creator, as the API server told cairn's admission webhook. The
	// webhook writes it at create and refuses any change to it.
	AnnotationActingAs = APIGroup + "/acting-as"
	// AnnotationKeepData on a Backup keeps the backup's data when the
	// resource is deleted.
	AnnotationKeepData = APIGroup + "/keep-data"
	// AnnotationMirrored marks a Backup the controller made for a backup
	// that another door started, or that it found in a location:
	// "temporal" or "location".
	AnnotationMirrored = APIGroup + "/mirrored-from"
	// AnnotationDeletionRun holds the run that deletes a deleted Backup's
	// data.
	AnnotationDeletionRun = APIGroup + "/deletion-run"
	// FinalizerDeleteData holds a Backup until its data is deleted.
	FinalizerDeleteData = APIGroup + "/delete-data"
	// FinalizerDeleteSchedule holds a Schedule until its Temporal
	// Schedule is deleted.
	FinalizerDeleteSchedule = APIGroup + "/delete-schedule"
)
