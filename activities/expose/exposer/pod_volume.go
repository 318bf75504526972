package exposer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrPodGone is a file-system backup whose pod no longer runs as the
// plan found it: its volume directory is gone, or another pod's.
var ErrPodGone = errors.New("the pod no longer runs")

// CheckPod makes sure the pod whose volume a file-system backup reads
// still runs, as the same pod (its UID), on the planned node; for a
// restore, that the pod written into is still the one found waiting.
func (v *Volumes) CheckPod(ctx context.Context, t Target) error {
	ns, name, _ := strings.Cut(t.Pod, "/")
	pod, err := v.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("pod %s was deleted since the backup planned its volumes: %w", t.Pod, ErrPodGone)
	case err != nil:
		return fmt.Errorf("pod %s: %w", t.Pod, err)
	case string(pod.UID) != t.PodUID:
		return fmt.Errorf("pod %s was replaced since the backup planned its volumes (uid %s, planned %s): %w", t.Pod, pod.UID, t.PodUID, ErrPodGone)
	case t.Mode == FSBackup && pod.Status.Phase != corev1.PodRunning:
		return fmt.Errorf("pod %s is %s, no longer Running: %w", t.Pod, pod.Status.Phase, ErrPodGone)
	case t.Mode == FSRestore && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed):
		return fmt.Errorf("pod %s has ended (%s): %w", t.Pod, pod.Status.Phase, ErrPodGone)
	case pod.Spec.NodeName != t.Node:
		return fmt.Errorf("pod %s runs on node %s, not %s: %w", t.Pod, pod.Spec.NodeName, t.Node, ErrPodGone)
	}
	return nil
}
