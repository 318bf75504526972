package exposer

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// ClaimRef names the claim a restored volume is handed to.
type ClaimRef struct {
	Namespace, Name string
	// Labels are put on the volume (the restore's labels).
	Labels map[string]string
}

// HandOver gives the volume the target's data mover wrote to the claim
// ref: the volume is set to Retain, its temporary claim deleted, and its
// claimRef pointed at ref (without a UID, so the claim binds to it when
// it is created with spec.volumeName). The data movers must be stopped
// first. It is idempotent: a retry finds the volume by its restored-from
// label, and leaves one already handed over as it is.
func (v *Volumes) HandOver(ctx context.Context, t Target, ref ClaimRef, progress func(string)) (string, error) {
	pv, err := v.handOverVolume(ctx, t)
	if err != nil {
		return "", err
	}
	if cur := pv.Spec.ClaimRef; cur != nil && cur.Namespace == ref.Namespace && cur.Name == ref.Name && pv.Labels[v1alpha1.LabelHandOver] == "" {
		return pv.Name, nil // handed over already: a retry must not unbind it
	}
	if pv.Labels[v1alpha1.LabelHandOver] != t.Name() || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		policy := pv.Spec.PersistentVolumeReclaimPolicy
		if prev := pv.Annotations[v1alpha1.AnnotationReclaimPolicy]; prev != "" {
			policy = corev1.PersistentVolumeReclaimPolicy(prev)
		}
		patch := map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{v1alpha1.LabelHandOver: t.Name(), v1alpha1.LabelRestoredFrom: t.Name()},
				"annotations": map[string]any{v1alpha1.AnnotationReclaimPolicy: string(policy)},
			},
			"spec": map[string]any{"persistentVolumeReclaimPolicy": string(corev1.PersistentVolumeReclaimRetain)},
		}
		if pv, err = patchVolume(ctx, v, pv.Name, patch); err != nil {
			return "", err
		}
	}
	if err := v.deleteClaim(ctx, t, progress); err != nil {
		return "", err
	}
	labels := map[string]any{v1alpha1.LabelHandOver: nil}
	for k, val := range ref.Labels {
		labels[k] = val
	}
	patch := map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec": map[string]any{"claimRef": map[string]any{
			"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ref.Namespace, "name": ref.Name,
			"uid": nil, "resourceVersion": nil,
		}},
	}
	if _, err := patchVolume(ctx, v, pv.Name, patch); err != nil {
		return "", err
	}
	return pv.Name, nil
}

// handOverVolume is the volume of the target's claim, or, once the claim
// is gone, the volume an earlier hand-over labeled.
func (v *Volumes) handOverVolume(ctx context.Context, t Target) (*corev1.PersistentVolume, error) {
	claim, err := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Get(ctx, t.Name(), metav1.GetOptions{})
	switch {
	case err == nil && claim.Spec.VolumeName != "":
		pv, err := v.Kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("volume %s of claim %s/%s: %w", claim.Spec.VolumeName, t.Namespace, t.Name(), err)
		}
		return pv, nil
	case err == nil:
		return nil, fmt.Errorf("claim %s/%s has no volume to hand over", t.Namespace, t.Name())
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("claim %s/%s: %w", t.Namespace, t.Name(), err)
	}
	list, err := v.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelRestoredFrom + "=" + t.Name()})
	if err != nil {
		return nil, fmt.Errorf("volumes restored from %s: %w", t.Name(), err)
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("claim %s/%s is gone and %d volumes were restored from it", t.Namespace, t.Name(), len(list.Items))
	}
	return &list.Items[0], nil
}

func (v *Volumes) deleteClaim(ctx context.Context, t Target, progress func(string)) error {
	claims := v.Kube.CoreV1().PersistentVolumeClaims(t.Namespace)
	if err := claims.Delete(ctx, t.Name(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete claim %s/%s: %w", t.Namespace, t.Name(), err)
	}
	return wait.PollUntilContextCancel(ctx, v.poll(), true, func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, t.Name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		progress(fmt.Sprintf("waiting for claim %s/%s to be deleted", t.Namespace, t.Name()))
		return false, err
	})
}

func patchVolume(ctx context.Context, v *Volumes, name string, patch map[string]any) (*corev1.PersistentVolume, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	pv, err := v.Kube.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patch volume %s: %w", name, err)
	}
	return pv, nil
}

// deleteUnfinishedHandOver deletes a volume whose hand-over was cut short
// and is abandoned: nothing will ever bind it.
func (v *Volumes) deleteUnfinishedHandOver(ctx context.Context, t Target) error {
	list, err := v.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelHandOver + "=" + t.Name()})
	if err != nil {
		return fmt.Errorf("volumes handed over from %s: %w", t.Name(), err)
	}
	for _, pv := range list.Items {
		if err := v.DeleteVolume(ctx, pv.Name); err != nil {
			return err
		}
	}
	return nil
}

// DeleteVolume gives a restored volume nothing will bind back to the
// cluster to delete, with its data: Delete as its reclaim policy, and a
// claimRef with a UID, so the volume controller finds its claim gone,
// releases it and has the driver delete it.
func (v *Volumes) DeleteVolume(ctx context.Context, name string) error {
	pv, err := v.Kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	spec := map[string]any{"persistentVolumeReclaimPolicy": string(corev1.PersistentVolumeReclaimDelete)}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
		spec["claimRef"] = map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
			"namespace": "cairn-abandoned", "name": name, "uid": "cairn-abandoned-" + name}
	}
	if _, err := patchVolume(ctx, v, name, map[string]any{"spec": spec}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// HandOverState is where a handed-over volume's claim stands.
type HandOverState struct {
	// Done: the claim is bound to the volume (Why is empty), or will never
	// be (Why says why: the volume is gone, or the claim bound another).
	Done bool
	// Orphaned: the volume is not the claim's; nothing will bind it.
	Orphaned bool
	// ClaimMissing: the claim does not exist (yet).
	ClaimMissing bool
	Why          string
}

// FinishHandOver checks whether the claim is bound to the handed-over
// volume, and once it is gives the volume back the reclaim policy it
// had.
func (v *Volumes) FinishHandOver(ctx context.Context, namespace, claim, volume string) (HandOverState, error) {
	pv, err := v.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return HandOverState{Done: true, Why: "its restored volume " + volume + " is gone"}, nil
	}
	if err != nil {
		return HandOverState{}, fmt.Errorf("volume %s: %w", volume, err)
	}
	c, err := v.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return HandOverState{ClaimMissing: true, Why: fmt.Sprintf("claim %s/%s was not created", namespace, claim)}, nil
	}
	if err != nil {
		return HandOverState{}, fmt.Errorf("claim %s/%s: %w", namespace, claim, err)
	}
	if c.Spec.VolumeName != "" && c.Spec.VolumeName != volume {
		return HandOverState{Done: true, Orphaned: true,
			Why: fmt.Sprintf("claim %s/%s is bound to volume %s, not to the restored %s", namespace, claim, c.Spec.VolumeName, volume)}, nil
	}
	if c.Status.Phase != corev1.ClaimBound {
		return HandOverState{Why: fmt.Sprintf("claim %s/%s is %s, not yet bound to volume %s", namespace, claim, c.Status.Phase, volume)}, nil
	}
	if policy := pv.Annotations[v1alpha1.AnnotationReclaimPolicy]; policy != "" {
		patch := map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{v1alpha1.AnnotationReclaimPolicy: nil}},
			"spec":     map[string]any{"persistentVolumeReclaimPolicy": policy},
		}
		if _, err := patchVolume(ctx, v, volume, patch); err != nil {
			return HandOverState{}, err
		}
	}
	return HandOverState{Done: true}, nil
}
