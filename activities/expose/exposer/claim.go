package exposer

import (
	"context"
	"fmt"
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/objects"
)

// Volumes creates and deletes the claims data movers mount. It is shared
// by the exposers: only how the data mover starts differs.
type Volumes struct {
	Kube      kubernetes.Interface
	Snapshots snapclient.Interface
	// Poll is how often waits look again (default 500ms).
	Poll time.Duration
}

func (v *Volumes) poll() time.Duration {
	if v.Poll > 0 {
		return v.Poll
	}
	return 500 * time.Millisecond
}

func labels(t Target) map[string]string {
	return map[string]string{v1alpha1.LabelDataMover: t.Name(), v1alpha1.LabelOwner: t.Owner}
}

// EnsureClaim creates the target's claim (from a clone of its snapshot in
// backup mode) and returns it.
func (v *Volumes) EnsureClaim(ctx context.Context, t Target) (*corev1.PersistentVolumeClaim, error) {
	if err := v.ensureNamespace(ctx, t.Namespace); err != nil {
		return nil, err
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Namespace: t.Namespace, Labels: labels(t)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: accessModes(t.AccessModes),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(max(t.Size, 1<<20), resource.BinarySI),
			}},
		},
	}
	if t.StorageClass != "" {
		claim.Spec.StorageClassName = &t.StorageClass
	}
	if t.Mode == Backup {
		if err := v.ensureClone(ctx, t); err != nil {
			return nil, err
		}
		group := objects.SnapshotGroup
		claim.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: t.Name()}
	}
	got, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("data mover claim %s/%s: %w", t.Namespace, t.Name(), err)
	}
	return got, nil
}

func accessModes(modes []string) []corev1.PersistentVolumeAccessMode {
	if len(modes) == 0 {
		return []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	out := make([]corev1.PersistentVolumeAccessMode, 0, len(modes))
	for _, m := range modes {
		out = append(out, corev1.PersistentVolumeAccessMode(m))
	}
	return out
}

func (v *Volumes) ensureNamespace(ctx context.Context, name string) error {
	_, err := v.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err = v.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("data mover namespace %s: %w", name, err)
	}
	return nil
}

// ensureClone binds a new VolumeSnapshot in the data mover namespace to
// a pre-provisioned content with the backup snapshot's handle. The clone's
// content is Retain: deleting the clone never deletes the driver's
// snapshot, which the backup still owns.
func (v *Volumes) ensureClone(ctx context.Context, t Target) error {
	src, err := v.Snapshots.SnapshotV1().VolumeSnapshots(t.SourceNamespace).Get(ctx, t.Snapshot, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("snapshot %s/%s to expose: %w", t.SourceNamespace, t.Snapshot, err)
	}
	if src.Status == nil || src.Status.BoundVolumeSnapshotContentName == nil {
		return fmt.Errorf("snapshot %s/%s is not bound to a content", t.SourceNamespace, t.Snapshot)
	}
	content, err := v.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, *src.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("content of snapshot %s/%s: %w", t.SourceNamespace, t.Snapshot, err)
	}
	if content.Status == nil || content.Status.SnapshotHandle == nil {
		return fmt.Errorf("content %s has no snapshot handle yet", content.Name)
	}
	handle := *content.Status.SnapshotHandle
	clone := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Labels: labels(t)},
		Spec: snapv1.VolumeSnapshotContentSpec{
			DeletionPolicy:          snapv1.VolumeSnapshotContentRetain,
			Driver:                  content.Spec.Driver,
			Source:                  snapv1.VolumeSnapshotContentSource{SnapshotHandle: &handle},
			VolumeSnapshotClassName: content.Spec.VolumeSnapshotClassName,
			VolumeSnapshotRef:       corev1.ObjectReference{Namespace: t.Namespace, Name: t.Name()},
		},
	}
	if _, err := v.Snapshots.SnapshotV1().VolumeSnapshotContents().Create(ctx, clone, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("snapshot clone content %s: %w", t.Name(), err)
	}
	contentName := t.Name()
	snap := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Namespace: t.Namespace, Labels: labels(t)},
		Spec: snapv1.VolumeSnapshotSpec{
			Source:                  snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: &contentName},
			VolumeSnapshotClassName: src.Spec.VolumeSnapshotClassName,
		},
	}
	if _, err := v.Snapshots.SnapshotV1().VolumeSnapshots(t.Namespace).Create(ctx, snap, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("snapshot clone %s/%s: %w", t.Namespace, t.Name(), err)
	}
	return nil
}

// WaitBound waits until the target's claim is bound and returns its
// volume.
func (v *Volumes) WaitBound(ctx context.Context, t Target, progress func(string)) (*corev1.PersistentVolume, error) {
	var pv *corev1.PersistentVolume
	err := wait.PollUntilContextCancel(ctx, v.poll(), true, func(ctx context.Context) (bool, error) {
		c, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("data mover claim %s/%s: %w", t.Namespace, t.Name(), err)
		}
		if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName == "" {
			progress(fmt.Sprintf("waiting for claim %s/%s to be bound (%s)", t.Namespace, t.Name(), c.Status.Phase))
			return false, nil
		}
		pv, err = v.Kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("volume %s of claim %s/%s: %w", c.Spec.VolumeName, t.Namespace, t.Name(), err)
		}
		return true, nil
	})
	return pv, err
}

// ClaimState says where the target's claim stands, for a diagnosis.
func (v *Volumes) ClaimState(ctx context.Context, t Target) string {
	c, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("claim %s/%s: %v", t.Namespace, t.Name(), err)
	}
	if c.Status.Phase == corev1.ClaimBound {
		return ""
	}
	msg := fmt.Sprintf("claim %s/%s is %s", t.Namespace, t.Name(), c.Status.Phase)
	events, err := v.Kube.CoreV1().Events(t.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=" + t.Name()})
	if err == nil && len(events.Items) > 0 {
		last := events.Items[len(events.Items)-1]
		msg += ": " + last.Reason + ": " + last.Message
	}
	return msg
}

// DeleteAll deletes the target's claim and snapshot clone, and waits until
// the claim's volume is gone too. The volume takes its reclaim policy from
// the class; one of a Retain class is set to Delete first, or it would
// stay Released and the wait would never end.
func (v *Volumes) DeleteAll(ctx context.Context, t Target, progress func(string)) error {
	claims := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace)
	c, err := claims.Get(ctx, t.Name(), metav1.GetOptions{})
	volume := ""
	switch {
	case err == nil:
		volume = c.Spec.VolumeName
		if err := v.reclaimOnRelease(ctx, volume); err != nil {
			return err
		}
		if err := claims.Delete(ctx, t.Name(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete claim %s/%s: %w", t.Namespace, t.Name(), err)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("claim %s/%s: %w", t.Namespace, t.Name(), err)
	}
	if t.Mode == Restore {
		if err := v.deleteUnfinishedHandOver(ctx, t); err != nil {
			return err
		}
	}
	if t.Mode == Backup {
		err := v.Snapshots.SnapshotV1().VolumeSnapshots(t.Namespace).Delete(ctx, t.Name(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete snapshot clone %s/%s: %w", t.Namespace, t.Name(), err)
		}
		err = v.Snapshots.SnapshotV1().VolumeSnapshotContents().Delete(ctx, t.Name(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete snapshot clone content %s: %w", t.Name(), err)
		}
	}
	return wait.PollUntilContextCancel(ctx, v.poll(), true, func(ctx context.Context) (bool, error) {
		if err := v.releaseClone(ctx, t); err != nil {
			return false, err
		}
		gone, err := v.gone(ctx, t, volume)
		if err == nil && !gone {
			progress(fmt.Sprintf("waiting for claim %s/%s, its volume and snapshot clone to be deleted", t.Namespace, t.Name()))
		}
		return gone, err
	})
}

// reclaimOnRelease sets the reclaim policy of a volume only a data mover
// claim used (a snapshot clone's, or a restore's not handed over) to
// Delete.
func (v *Volumes) reclaimOnRelease(ctx context.Context, volume string) error {
	if volume == "" {
		return nil
	}
	pvs := v.Kube.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(ctx, volume, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("volume %s: %w", volume, err)
	case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		return nil
	}
	patch := []byte(`{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}`)
	if _, err := pvs.Patch(ctx, volume, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set volume %s to be deleted with its claim: %w", volume, err)
	}
	return nil
}

// provisionerSourceFinalizer is the external-provisioner's protection of
// a snapshot a claim is being provisioned from. It stays when the claim
// is deleted while provisioning fails.
const provisionerSourceFinalizer = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection"

// releaseClone drops the provisioner's protection from the target's
// snapshot clone once the target's claim is gone: nothing can be
// provisioned from the clone any more, and the clone is ours.
func (v *Volumes) releaseClone(ctx context.Context, t Target) error {
	if t.Mode != Backup {
		return nil
	}
	if _, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return nil // still there, or unknown: wait
	}
	snaps := v.Snapshots.SnapshotV1().VolumeSnapshots(t.Namespace)
	s, err := snaps.Get(ctx, t.Name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot clone %s/%s: %w", t.Namespace, t.Name(), err)
	}
	if s.DeletionTimestamp == nil || !slices.Contains(s.Finalizers, provisionerSourceFinalizer) {
		return nil
	}
	s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == provisionerSourceFinalizer })
	if _, err := snaps.Update(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("release snapshot clone %s/%s: %w", t.Namespace, t.Name(), err)
	}
	return nil
}

func (v *Volumes) gone(ctx context.Context, t Target, volume string) (bool, error) {
	checks := []func() error{
		func() error {
			_, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
			return err
		},
	}
	if volume != "" {
		checks = append(checks, func() error {
			_, err := v.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
			return err
		})
	}
	if t.Mode == Backup {
		checks = append(checks, func() error {
			_, err := v.Snapshots.SnapshotV1().VolumeSnapshots(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
			return err
		}, func() error {
			_, err := v.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, t.Name(), metav1.GetOptions{})
			return err
		})
	}
	for _, check := range checks {
		err := check()
		if err == nil {
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return true, nil
}
