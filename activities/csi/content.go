package csi

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-backup/cairn/internal/clock"
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
	switch {
	case vsExists:
		if content != "" {
			_, err := snaps.VolumeSnapshotContents().Patch(ctx, content, mergePatch, []byte(`{"spec":{"deletionPolicy":"Delete"}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("set volumesnapshotcontent %s to Delete: %w", content, err)
			}
		}
		pre := metav1.Preconditions{UID: &uid}
		if uid == "" {
			pre.UID = nil
		}
		if err := snaps.VolumeSnapshots(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete volumesnapshot %s/%s: %w", namespace, name, err)
		}
	case content != "":
		if err := a.deleteContent(ctx, content); err != nil {
			return err
		}
	}
	return a.waitGone(ctx, namespace, name, content)
}

// deleteContent deletes a content whose VolumeSnapshot is gone. The
// annotation tells the sidecar to delete the driver's snapshot too, as the
// snapshot controller does when it deletes a content itself.
func (a *Activities) deleteContent(ctx context.Context, content string) error {
	contents := a.Snapshots.SnapshotV1().VolumeSnapshotContents()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"yes"}},"spec":{"deletionPolicy":"Delete"}}`, objects.AnnotationSnapshotBeingDeleted)
	if _, err := contents.Patch(ctx, content, mergePatch, []byte(patch), metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("set volumesnapshotcontent %s to Delete: %w", content, err)
	}
	if err := contents.Delete(ctx, content, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete volumesnapshotcontent %s: %w", content, err)
	}
	return nil
}

// waitGone polls until the VolumeSnapshot and the content are deleted.
//
// Once the VolumeSnapshot is gone, a content still there and not being
// deleted is deleted here: the snapshot controller decides whether to
// delete the content from its cached copy, and a cache that had not yet
// seen the switch to Delete leaves the content for good (the controller
// never deletes a content whose VolumeSnapshot is missing).
func (a *Activities) waitGone(ctx context.Context, namespace, name, content string) error {
	snaps := a.Snapshots.SnapshotV1()
	for {
		vsGone := true
		if name != "" {
			_, err := snaps.VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
			vsGone = apierrors.IsNotFound(err)
		}
		contentGone := true
		if content != "" {
			c, err := snaps.VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
			contentGone = apierrors.IsNotFound(err)
			if err == nil && vsGone && c.DeletionTimestamp == nil {
				if err := a.deleteContent(ctx, content); err != nil {
					return err
				}
				continue
			}
		}
		if vsGone && contentGone {
			return nil
		}
		activity.RecordHeartbeat(ctx, fmt.Sprintf("waiting for volumesnapshot %s/%s and content %s to be deleted", namespace, name, content))
		if err := clock.Sleep(ctx, a.PollInterval); err != nil {
			return err
		}
	}
}
