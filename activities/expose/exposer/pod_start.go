package exposer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// imageNeverPulls are the reasons a container waits for an image the
// node will not get by waiting: pulls are forbidden (pull policy Never),
// the name is not an image's, or pulling failed and the kubelet backs
// off. Velero takes the same ones as an exposed pod's end.
var imageNeverPulls = map[string]bool{"ErrImageNeverPull": true, "InvalidImageName": true, "ImagePullBackOff": true}

// StartState reads the attempt's pod: running, failing on its image, or
// ended (or gone) before its data mover took its task.
func (p *Pod) StartState(ctx context.Context, t Target) (v1alpha1.StartWatchResult, error) {
	pod, err := p.Kube.CoreV1().Pods(t.Namespace).Get(ctx, t.moverName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return v1alpha1.StartWatchResult{Never: fmt.Sprintf("data mover pod %s/%s was deleted before it started", t.Namespace, t.moverName()), Retry: true}, nil
	}
	if err != nil {
		return v1alpha1.StartWatchResult{}, fmt.Errorf("data mover pod %s/%s: %w", t.Namespace, t.moverName(), err)
	}
	return podStartState(pod), nil
}

func podStartState(pod *corev1.Pod) v1alpha1.StartWatchResult {
	name := pod.Namespace + "/" + pod.Name
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		msg := fmt.Sprintf("data mover pod %s ended %s", name, pod.Status.Phase)
		if pod.Status.Reason != "" {
			msg += fmt.Sprintf(": %s %s", pod.Status.Reason, pod.Status.Message)
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				msg += fmt.Sprintf(", container %s exited %d: %s %s", cs.Name, term.ExitCode, term.Reason, term.Message)
			}
		}
		return v1alpha1.StartWatchResult{Never: msg, Retry: true}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return v1alpha1.StartWatchResult{Running: true}
		}
		if w := cs.State.Waiting; w != nil && imageNeverPulls[w.Reason] {
			return v1alpha1.StartWatchResult{Never: fmt.Sprintf("data mover pod %s cannot start: container %s waiting: %s %s", name, cs.Name, w.Reason, w.Message)}
		}
	}
	return v1alpha1.StartWatchResult{}
}
