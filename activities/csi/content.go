package csi

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-backup/cairn/internal/objects"
)

const mergePatch = types.MergePatchType

// deleteSnapshot deletes a native snapshot for good: the VolumeSnapshot
// (if it still exists), its content and the driver's snapshot. The
// content is switched to Delete first, so whichever way it goes the
// sidecar deletes the snapshot in the driver: through the VolumeSnapshot's
// deletion, or, once that is gone, through AnnotationSnapshotBeingDeleted,
// which the snapshot controller would otherwise have set. It returns once
// the content is gone, heartbeating while it waits.
//
// uid, when known, is the VolumeSnapshot's: one of the same name with
// another UID (a restore's, say) is not this snapshot and is left alone.
func (a *Activities) deleteSnapshot(ctx context.Context, namespace, name string, uid types.UID, content string) error {
	snaps := a.Snapshots.SnapshotV1()
	vsExists := false
	if name != "" {
		vs, err := snaps.VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			vsExists = uid == "" || vs.UID == uid
			if !vsExists {
				name = ""
			}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get volumesnapshot %s/%s: %w", namespace, name, err)
		}
	}
	if content != "" {
		patch := `{"spec":{"deletionPolicy":"Delete"}}`
		if !vsExists {
			patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:"yes"}},"spec":{"deletionPolicy":"Delete"}}`, objects.AnnotationSnapshotBeingDeleted)
		}
		_, err := snaps.VolumeSnapshotContents().Patch(ctx, content, mergePatch, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("set volumesnapshotcontent %s to Delete: %w", content, err)
		}
	}
	if vsExists {
		pre := metav1.Preconditions{UID: &uid}
		if uid == "" {
			pre.UID = nil
		}
		if err := snaps.VolumeSnapshots(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete volumesnapshot %s/%s: %w", namespace, name, err)
		}
	} else if content != "" {
		if err := snaps.VolumeSnapshotContents().Delete(ctx, content, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete volumesnapshotcontent %s: %w", content, err)
		}
	}
	return a.waitGone(ctx, namespace, name, content)
}

// waitGone polls until the VolumeSnapshot and the content are deleted.
func (a *Activities) waitGone(ctx context.Context, namespace, name, content string) error {
	snaps := a.Snapshots.SnapshotV1()
	for {
		gone := true
		if name != "" {
			_, err := snaps.VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
			gone = gone && apierrors.IsNotFound(err)
		}
		if content != "" {
			_, err := snaps.VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
			gone = gone && apierrors.IsNotFound(err)
		}
		if gone {
			return nil
		}
		activity.RecordHeartbeat(ctx, fmt.Sprintf("waiting for volumesnapshot %s/%s and content %s to be deleted", namespace, name, content))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(a.PollInterval):
		}
	}
}
