package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// pruneForNew makes room for one more kept snapshot of a volume: while
// the kept snapshots and the new one would be more than N, it deletes the
// oldest kept snapshot whose backup completed (Completed or
// PartiallyFailed in the location). Snapshots of backups still running or
// failed are never pruned. It returns the aliases it deleted.
func (a *Activities) pruneForNew(ctx context.Context, run *runlog.Run, backup string, v v1alpha1.Volume, alias string) ([]string, error) {
	n := a.Retention.For(v.Driver)
	kept, err := a.KeptSnapshots(ctx, v.PersistentVolume)
	if err != nil {
		return nil, err
	}
	var others []snapv1.VolumeSnapshotContent
	for _, c := range kept {
		if c.Labels[v1alpha1.LabelSnapshotAlias] != alias {
			others = append(others, c)
		}
	}
	excess := len(others) + 1 - n
	var pruned []string
	for _, c := range others {
		if excess <= 0 {
			break
		}
		owner := c.Labels[v1alpha1.LabelBackup]
		done, err := backupCompleted(ctx, run.Loc, owner)
		if err != nil {
			return pruned, err
		}
		if !done || owner == backup {
			run.Log.Info("Kept snapshot not pruned: its backup has not completed", zap.String("content", c.Name), zap.String("backup", owner))
			continue
		}
		if err := a.deleteSnapshot(ctx, c.Spec.VolumeSnapshotRef.Namespace, c.Spec.VolumeSnapshotRef.Name, c.Spec.VolumeSnapshotRef.UID, c.Name); err != nil {
			return pruned, fmt.Errorf("prune snapshot %s of backup %s: %w", c.Name, owner, err)
		}
		run.Log.Info("Pruned the oldest kept snapshot of the volume", zap.String("volume", v.PersistentVolume),
			zap.String("content", c.Name), zap.String("backup", owner), zap.Int("keepNewest", n))
		pruned = append(pruned, c.Labels[v1alpha1.LabelSnapshotAlias])
		excess--
	}
	return pruned, nil
}

// KeptSnapshots lists the retained snapshot contents of a volume (by its
// cairn.io/snapshot-volume-name label), oldest first.
func (a *Activities) KeptSnapshots(ctx context.Context, volume string) ([]snapv1.VolumeSnapshotContent, error) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelSnapshotVolume: volume}).String() + ",!" + v1alpha1.LabelRestore
	list, err := a.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list snapshots of volume %s: %w", volume, err)
	}
	var kept []snapv1.VolumeSnapshotContent
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil && c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentRetain {
			kept = append(kept, c)
		}
	}
	sort.Slice(kept, func(i, j int) bool {
		ti, tj := cutTime(kept[i]), cutTime(kept[j])
		if ti != tj {
			return ti < tj
		}
		return kept[i].Name < kept[j].Name
	})
	return kept, nil
}

// backupCompleted reports whether a backup in the location committed as
// Completed or PartiallyFailed.
func backupCompleted(ctx context.Context, loc *location.Location, backup string) (bool, error) {
	if backup == "" {
		return false, nil
	}
	var meta v1alpha1.BackupMetadata
	err := loc.ReadJSON(ctx, location.Backup(backup).Metadata(), &meta)
	switch {
	case errors.Is(err, location.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read backup %s: %w", backup, err)
	}
	return meta.Status.Phase == v1alpha1.PhaseCompleted || meta.Status.Phase == v1alpha1.PhasePartiallyFailed, nil
}

// cutTime is when the driver cut the snapshot (nanoseconds), or when its
// content was created (seconds) if the driver did not say.
func cutTime(c snapv1.VolumeSnapshotContent) int64 {
	if c.Status != nil && c.Status.CreationTime != nil {
		return *c.Status.CreationTime
	}
	return c.CreationTimestamp.UnixNano()
}
