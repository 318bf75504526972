package exposer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
)

// ErrPodMissing: the restored pod does not exist, yet or any more.
var ErrPodMissing = errors.New("no such pod")

// RestoredPod finds where a restored pod waits for a volume's copy: its
// UID, node and the volume's directory there, once its restore-wait init
// container runs (the kubelet has set its volumes up by then). Until
// then it says what it waits for. A pod that this restore did not make
// wait (it existed, or was made by a controller) is ErrPodGone.
func (v *Volumes) RestoredPod(ctx context.Context, restore, namespace, name, volume string) (*v1alpha1.PodVolume, string, error) {
	pod, err := v.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("pod %s/%s does not exist (yet): %w", namespace, name, ErrPodMissing)
	case err != nil:
		return nil, "", fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	case pod.Annotations[v1alpha1.RestoreWaitAnnotation] != restore:
		return nil, "", fmt.Errorf("pod %s/%s was not created by this restore (it existed, or another made it): it does not wait for its volume %s: %w",
			namespace, name, volume, ErrPodGone)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil, "", fmt.Errorf("pod %s/%s has ended (%s): %w", namespace, name, pod.Status.Phase, ErrPodGone)
	case pod.Spec.NodeName == "":
		return nil, fmt.Sprintf("pod %s/%s is not scheduled yet", namespace, name), nil
	}
	i := slices.IndexFunc(pod.Status.InitContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == v1alpha1.RestoreWaitContainer })
	if i < 0 || pod.Status.InitContainerStatuses[i].State.Running == nil {
		return nil, fmt.Sprintf("pod %s/%s on node %s: its init container %s is not running yet", namespace, name, pod.Spec.NodeName,
			v1alpha1.RestoreWaitContainer), nil
	}
	j := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume })
	if j < 0 {
		return nil, "", fmt.Errorf("pod %s/%s has no volume %s: %w", namespace, name, volume, ErrPodGone)
	}
	vol := pod.Spec.Volumes[j]
	pv := &v1alpha1.PodVolume{Pod: name, UID: string(pod.UID), Volume: volume, Node: pod.Spec.NodeName, Dir: kube.InlineVolumeDir(vol)}
	if vol.PersistentVolumeClaim != nil {
		dir, err := v.claimDir(ctx, namespace, vol.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, "", err
		}
		pv.Dir = dir
	}
	if pv.Dir == "" {
		return nil, "", fmt.Errorf("volume %s of pod %s/%s is of a kind cairn cannot write a copy into: %w", volume, namespace, name, ErrPodGone)
	}
	return pv, "", nil
}

// claimDir is the directory of the volume bound to a claim of a pod
// that runs, below the pod's.
func (v *Volumes) claimDir(ctx context.Context, namespace, claim string) (string, error) {
	c, err := v.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", namespace, claim, err)
	}
	pv, err := v.Kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("volume of claim %s/%s: %w", namespace, claim, err)
	}
	dir, why := kube.ClaimVolumeDir(pv)
	if why != "" {
		return "", fmt.Errorf("claim %s/%s: %s: %w", namespace, claim, why, ErrPodGone)
	}
	return dir, nil
}
