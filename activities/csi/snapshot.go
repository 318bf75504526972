package csi

import (
	"context"
	"errors"
	"fmt"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// CreateVolumeSnapshot creates the VolumeSnapshot of a claim, under the
// name the backup and claim determine, so a retried attempt finds the
// snapshot the first one made instead of cutting a second. In keep-newest
// mode it first deletes the oldest kept snapshots of the volume that would
// exceed N.
func (a *Activities) CreateVolumeSnapshot(ctx context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	v := in.Volume
	name := v1alpha1.SnapshotName(in.Backup, v)
	log := run.Log.With(zap.String("volume", v.Key()), zap.String("snapshot", name))
	res := &v1alpha1.CreateSnapshotResult{Name: name}

	existing, err := a.Snapshots.SnapshotV1().VolumeSnapshots(v.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if err := ours(existing.Labels, in.Backup, name); err != nil {
			return nil, err
		}
		log.Info("VolumeSnapshot exists already (an earlier attempt created it)")
		return res, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get volumesnapshot %s/%s: %w", v.Namespace, name, err)
	}

	if in.NativeSnapshots == v1alpha1.NativeSnapshotsKeepNewest {
		if res.Pruned, err = a.pruneForNew(ctx, run, in.Backup, v, name); err != nil {
			return nil, err
		}
	}
	class := v.SnapshotClass
	claim := v.Claim
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.Namespace, Labels: snapshotLabels(in.Backup, name, v.PersistentVolume)},
		Spec: snapv1.VolumeSnapshotSpec{
			Source:                  snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim},
			VolumeSnapshotClassName: &class,
		},
	}
	created, err := a.Snapshots.SnapshotV1().VolumeSnapshots(v.Namespace).Create(ctx, vs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		log.Info("VolumeSnapshot created concurrently by an earlier attempt")
		return res, nil
	case apierrors.IsNotFound(err):
		// The namespace is gone: nothing to snapshot any more.
		msg := fmt.Sprintf("create volumesnapshot %s/%s: %v", v.Namespace, name, err)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeSnapshotFailed, err)
	case err != nil:
		return nil, fmt.Errorf("create volumesnapshot %s/%s: %w", v.Namespace, name, err)
	}
	log.Info("VolumeSnapshot created", zap.String("class", class), zap.String("uid", string(created.UID)),
		zap.Strings("pruned", res.Pruned))
	return res, nil
}

// ours refuses a snapshot of the same name that another backup made.
func ours(labels map[string]string, backup, name string) error {
	if labels[v1alpha1.LabelBackup] == backup {
		return nil
	}
	msg := fmt.Sprintf("VolumeSnapshot %s exists but was not made by backup %s (label %s=%q)", name, backup,
		v1alpha1.LabelBackup, labels[v1alpha1.LabelBackup])
	return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeSnapshotFailed, nil)
}

func snapshotLabels(backup, alias, volume string) map[string]string {
	return map[string]string{
		v1alpha1.LabelBackup:         backup,
		v1alpha1.LabelSnapshotAlias:  alias,
		v1alpha1.LabelSnapshotVolume: volume,
	}
}

// WaitVolumeSnapshot polls a VolumeSnapshot until it is ready to use,
// heartbeating what it sees (the Temporal UI shows it; a timed-out wait
// reports it). Once ready, its content is set to Retain and labelled, so
// the native snapshot outlives the claim's namespace for as long as the
// backup owns it. An error the snapshot controller or the driver reports
// fails the operation for good.
func (a *Activities) WaitVolumeSnapshot(ctx context.Context, in v1alpha1.WaitSnapshotInput) (*v1alpha1.SnapshotInfo, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	v := in.Volume
	log := run.Log.With(zap.String("volume", v.Key()), zap.String("snapshot", in.Name))
	snaps := a.Snapshots.SnapshotV1()
	last := ""
	for {
		vs, err := snaps.VolumeSnapshots(v.Namespace).Get(ctx, in.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			msg := fmt.Sprintf("VolumeSnapshot %s/%s was deleted while the backup waited for it", v.Namespace, in.Name)
			return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeSnapshotFailed, err)
		case err != nil:
			log.Warn("Reading the VolumeSnapshot failed; retrying", zap.Error(err))
		default:
			if err := ours(vs.Labels, in.Backup, in.Name); err != nil {
				return nil, err
			}
			if s := vs.Status; s != nil && s.Error != nil && s.Error.Message != nil {
				msg := fmt.Sprintf("VolumeSnapshot %s/%s failed: %s", v.Namespace, in.Name, *s.Error.Message)
				return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeSnapshotFailed, nil)
			}
			if seen := describeSnapshot(vs); seen != last {
				log.Info("Waiting for VolumeSnapshot", zap.String("state", seen))
				last = seen
			}
			if vs.Status != nil && vs.Status.ReadyToUse != nil && *vs.Status.ReadyToUse && vs.Status.BoundVolumeSnapshotContentName != nil {
				return a.retain(ctx, log, in, vs)
			}
		}
		activity.RecordHeartbeat(ctx, last)
		if err := clock.Sleep(ctx, a.PollInterval); err != nil {
			return nil, err
		}
	}
}

// describeSnapshot is a one-line state for heartbeats and logs.
func describeSnapshot(vs *snapv1.VolumeSnapshot) string {
	s := vs.Status
	if s == nil {
		return "no status yet (snapshot controller has not seen it)"
	}
	content := "none"
	if s.BoundVolumeSnapshotContentName != nil {
		content = *s.BoundVolumeSnapshotContentName
	}
	ready := s.ReadyToUse != nil && *s.ReadyToUse
	return fmt.Sprintf("readyToUse=%t content=%s", ready, content)
}

// retain sets the ready snapshot's content to Retain with cairn's labels
// and returns what the backup records.
func (a *Activities) retain(ctx context.Context, log *zap.Logger, in v1alpha1.WaitSnapshotInput, vs *snapv1.VolumeSnapshot) (*v1alpha1.SnapshotInfo, error) {
	contentName := *vs.Status.BoundVolumeSnapshotContentName
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q,%q:%q}},"spec":{"deletionPolicy":"Retain"}}`,
		v1alpha1.LabelBackup, in.Backup, v1alpha1.LabelSnapshotAlias, in.Name, v1alpha1.LabelSnapshotVolume, in.Volume.PersistentVolume)
	content, err := a.Snapshots.SnapshotV1().VolumeSnapshotContents().Patch(ctx, contentName, mergePatch, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("retain volumesnapshotcontent %s: %w", contentName, err)
	}
	info := &v1alpha1.SnapshotInfo{Name: in.Name, Content: contentName}
	if s := content.Status; s != nil {
		if s.SnapshotHandle != nil {
			info.Handle = *s.SnapshotHandle
		}
		if s.RestoreSize != nil {
			info.SizeBytes = *s.RestoreSize
		}
		if s.CreationTime != nil {
			t := time.Unix(0, *s.CreationTime).UTC()
			info.ReadyTime = &t
		}
	}
	if vs.Status.RestoreSize != nil {
		info.RestoreBytes = vs.Status.RestoreSize.Value()
	}
	if info.Handle == "" {
		return nil, errors.New("volumesnapshotcontent " + contentName + " is ready but has no snapshot handle yet")
	}
	log.Info("VolumeSnapshot ready; content retained", zap.String("content", contentName), zap.String("handle", info.Handle),
		zap.Int64("restoreBytes", info.RestoreBytes))
	return info, nil
}

// RemoveVolumeSnapshot deletes a snapshot whose operation failed or was
// canceled, with its content and the driver's snapshot, and waits until
// they are gone. Removing what is already gone succeeds.
func (a *Activities) RemoveVolumeSnapshot(ctx context.Context, in v1alpha1.RemoveSnapshotInput) error {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	log := run.Log.With(zap.String("volume", in.Volume.Key()), zap.String("snapshot", in.Name))
	vs, err := a.Snapshots.SnapshotV1().VolumeSnapshots(in.Volume.Namespace).Get(ctx, in.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		log.Info("No VolumeSnapshot to remove")
		return nil
	case err != nil:
		return fmt.Errorf("get volumesnapshot %s/%s: %w", in.Volume.Namespace, in.Name, err)
	}
	if vs.Labels[v1alpha1.LabelBackup] != in.Backup {
		log.Warn("VolumeSnapshot of that name belongs to another backup; left alone")
		return nil
	}
	content := ""
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		content = *vs.Status.BoundVolumeSnapshotContentName
	}
	if err := a.deleteSnapshot(ctx, in.Volume.Namespace, in.Name, vs.UID, content); err != nil {
		return err
	}
	log.Info("VolumeSnapshot removed with its content and the driver's snapshot", zap.String("content", content))
	return nil
}
