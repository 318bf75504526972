package csi

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// DeleteBackupSnapshots deletes every native snapshot a backup kept (its
// VolumeSnapshotContents, found by the cairn.io/backup-name label, with
// their VolumeSnapshots and the driver's snapshots). It runs when a backup
// is deleted, and when one fails after some snapshots were taken. Deleting
// what is gone succeeds, so it resumes wherever a dead worker left it.
func (a *Activities) DeleteBackupSnapshots(ctx context.Context, in v1alpha1.DeleteSnapshotsInput) (*v1alpha1.DeleteSnapshotsResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	// Restored copies carry the backup's label too, with a restore label:
	// they are the restore's, not the backup's.
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelBackup: in.Backup}).String() + ",!" + v1alpha1.LabelRestore
	list, err := a.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		if apierrors.IsNotFound(err) { // the cluster serves no snapshot API: nothing to delete
			return &v1alpha1.DeleteSnapshotsResult{}, nil
		}
		return nil, fmt.Errorf("list snapshots of backup %s: %w", in.Backup, err)
	}
	res := &v1alpha1.DeleteSnapshotsResult{}
	for _, c := range list.Items {
		ref := c.Spec.VolumeSnapshotRef
		if err := a.deleteSnapshot(ctx, ref.Namespace, ref.Name, ref.UID, c.Name); err != nil {
			return res, err
		}
		res.Deleted++
		activity.RecordHeartbeat(ctx, res.Deleted)
		run.Log.Info("Deleted the backup's native snapshot", zap.String("content", c.Name),
			zap.String("snapshot", ref.Namespace+"/"+ref.Name), zap.String("alias", c.Labels[v1alpha1.LabelSnapshotAlias]))
	}
	return res, nil
}
