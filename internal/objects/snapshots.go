package objects

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// The snapshot API's group and the group-resources of its objects in a
// backup.
const (
	SnapshotGroup                  = "snapshot.storage.k8s.io"
	VolumeSnapshotsResource        = "volumesnapshots." + SnapshotGroup
	VolumeSnapshotContentsResource = "volumesnapshotcontents." + SnapshotGroup
)

// Annotations the snapshot controllers put on a content. The CSI
// snapshotter deletes the storage system's snapshot of a content being
// deleted that carries AnnotationSnapshotBeingDeleted.
const (
	AnnotationSnapshotBeingDeleted = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"
	annotationSnapshotBeingCreated = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"
)

// snapshotFacts is what a VolumeSnapshot or its content said in its status
// when it was backed up; Prepare drops the status, so it is read first.
type snapshotFacts struct {
	content string // VolumeSnapshot: the content it was bound to
	handle  string // VolumeSnapshotContent: the driver's snapshot ID
}

func readSnapshotFacts(obj *unstructured.Unstructured) snapshotFacts {
	var f snapshotFacts
	f.content, _, _ = unstructured.NestedString(obj.Object, "status", "boundVolumeSnapshotContentName")
	f.handle, _, _ = unstructured.NestedString(obj.Object, "status", "snapshotHandle")
	return f
}

// RestoredContentName is the name of the content a restore creates for a
// backed-up VolumeSnapshotContent: the backup's own content may still
// exist (retained), so the copy needs a name of its own, the same in
// every attempt of the restore.
func RestoredContentName(restore, content string) string {
	sum := sha256.Sum256([]byte(restore + "\x00" + content))
	return "cairn-restore-" + hex.EncodeToString(sum[:])[:20]
}

// prepareVolumeSnapshot points a restored snapshot at the restored copy
// of its content, so it binds to the existing snapshot in the storage
// system instead of cutting a new one of a claim.
func prepareVolumeSnapshot(obj *unstructured.Unstructured, f snapshotFacts, o Options) {
	dropSnapshotMetadata(obj)
	if f.content == "" {
		return
	}
	_ = unstructured.SetNestedMap(obj.Object, map[string]any{
		"volumeSnapshotContentName": RestoredContentName(o.Restore, f.content),
	}, "spec", "source")
}

// prepareSnapshotContent turns a backed-up content into a pre-provisioned
// one: the driver's snapshot handle as its source, bound ahead to the
// restored VolumeSnapshot, and Retain, so deleting the restored objects
// never deletes the backup's snapshot.
func prepareSnapshotContent(obj *unstructured.Unstructured, f snapshotFacts, o Options) {
	dropSnapshotMetadata(obj)
	if f.handle == "" {
		return
	}
	obj.SetName(RestoredContentName(o.Restore, obj.GetName()))
	_ = unstructured.SetNestedMap(obj.Object, map[string]any{"snapshotHandle": f.handle}, "spec", "source")
	_ = unstructured.SetNestedField(obj.Object, "Retain", "spec", "deletionPolicy")
	ref, _, _ := unstructured.NestedMap(obj.Object, "spec", "volumeSnapshotRef")
	if ref == nil {
		ref = map[string]any{}
	}
	if ns, _ := ref["namespace"].(string); ns != "" {
		ref["namespace"] = o.mapNS(ns)
	}
	delete(ref, "uid")
	delete(ref, "resourceVersion")
	_ = unstructured.SetNestedMap(obj.Object, ref, "spec", "volumeSnapshotRef")
}

// dropSnapshotMetadata removes what the snapshot controllers and the
// backup put on a snapshot object: their finalizers and annotations, and
// cairn's alias and volume labels.
func dropSnapshotMetadata(obj *unstructured.Unstructured) {
	obj.SetFinalizers(nil)
	for _, a := range []string{AnnotationSnapshotBeingDeleted, annotationSnapshotBeingCreated} {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", a)
	}
	for _, l := range []string{v1alpha1.LabelSnapshotAlias, v1alpha1.LabelSnapshotVolume} {
		unstructured.RemoveNestedField(obj.Object, "metadata", "labels", l)
	}
}

// restoreClaimFromSnapshot makes a claim provision a new volume from the
// restored VolumeSnapshot of its backed-up volume.
func restoreClaimFromSnapshot(obj *unstructured.Unstructured, snapshot string) {
	unbindClaim(obj)
	unstructured.RemoveNestedField(obj.Object, "spec", "dataSourceRef")
	_ = unstructured.SetNestedMap(obj.Object, map[string]any{
		"apiGroup": SnapshotGroup, "kind": "VolumeSnapshot", "name": snapshot,
	}, "spec", "dataSource")
}
