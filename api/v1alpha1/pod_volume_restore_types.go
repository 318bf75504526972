package v1alpha1

import (
	"fmt"
	"time"
)

// The restored pod's side of a pod volume restore: the pods that get a
// file-system copy back wait for it in an init container, which watches
// a directory of markers, one file per volume, in an emptyDir of its
// own.
const (
	// RestoreWaitContainer is the init container put first in a restored
	// pod whose volumes get their copies back.
	RestoreWaitContainer = "cairn-restore-wait"
	// RestoreWaitVolume is its emptyDir of markers, at RestoreWaitDir.
	RestoreWaitVolume = "cairn-restore-wait"
	RestoreWaitDir    = "/cairn-restore-wait"
	// RestoreWaitTmpVolume is its /tmp, where only libraries the cairn
	// binary links write (a read-only root has none).
	RestoreWaitTmpVolume = "cairn-restore-tmp"
	// RestoreWaitAnnotation on a restored pod names the restore that
	// writes its volumes: a pod without it (one that existed, or one a
	// controller made) has no init container waiting.
	RestoreWaitAnnotation = "cairn.io/pod-volume-restore"
	// MarkerRestored is a marker's content once the volume's data is in
	// place; any other content is why it never will be.
	MarkerRestored = "restored"
)

// PodVolumeRestoreID is the ID of a pod volume's restore.
func PodVolumeRestoreID(namespace, pod, volume string) string {
	return fmt.Sprintf("fs-restore/%s/%s/%s", namespace, pod, volume)
}

// PodVolumeRestoreWorkflowID is the child workflow of a pod volume's
// restore.
func PodVolumeRestoreWorkflowID(restore, namespace, pod, volume string) string {
	return fmt.Sprintf("restore/%s/podvolume/%s/%s/%s", restore, namespace, pod, volume)
}

// AwaitRestoredPodInput waits, up to Timeout, until the restored pod
// runs its restore-wait init container on a node, and resolves its
// volume's directory there.
type AwaitRestoredPodInput struct {
	Restore   string        `json:"restore"`
	Location  string        `json:"location"`
	Namespace string        `json:"namespace"`
	Pod       string        `json:"pod"`
	Volume    string        `json:"volume"`
	Timeout   time.Duration `json:"timeout"`
	// Ended: the restore has ended, so a pod that does not exist now
	// never will.
	Ended bool `json:"ended,omitempty"`
}

// MarkPodVolumeInput writes a pod volume's marker: MarkerRestored, or
// why its data will not come.
type MarkPodVolumeInput struct {
	Restore  string `json:"restore"`
	Location string `json:"location"`
	Volume   string `json:"volume"`
	Marker   string `json:"marker"`
	Content  string `json:"content"`
}
