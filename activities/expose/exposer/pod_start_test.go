package exposer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestPodStartStateTellsWaitingFromNever: a pod on its way (scheduled,
// creating, pulling) may still start; one whose image the node will not
// pull never starts, and another data mover would not either; one that
// ended or was deleted first never starts, but another may.
func TestPodStartStateTellsWaitingFromNever(t *testing.T) {
	target := Target{Namespace: "movers", TaskQueue: "cairn-datamover-b-x", Attempt: 2}
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "datamover",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "about " + reason}}}}}
	}
	for name, tc := range map[string]struct {
		status corev1.PodStatus
		want   v1alpha1.StartWatchResult
		never  []string
	}{
		"scheduling":      {status: corev1.PodStatus{Phase: corev1.PodPending}},
		"creating":        {status: waiting("ContainerCreating")},
		"pulling failed":  {status: waiting("ErrImagePull")},
		"never pulled":    {status: waiting("ErrImageNeverPull"), never: []string{"cannot start", "ErrImageNeverPull", "about ErrImageNeverPull"}},
		"invalid image":   {status: waiting("InvalidImageName"), never: []string{"InvalidImageName"}},
		"pull backed off": {status: waiting("ImagePullBackOff"), never: []string{"ImagePullBackOff"}},
		"running": {status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "datamover",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, want: v1alpha1.StartWatchResult{Running: true}},
		"evicted": {status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "node low on memory"},
			want: v1alpha1.StartWatchResult{Retry: true}, never: []string{"ended Failed", "Evicted node low on memory"}},
		"exited": {status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "datamover",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "bad flag"}}}}},
			want: v1alpha1.StartWatchResult{Retry: true}, never: []string{"container datamover exited 2: Error bad flag"}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "movers", Name: target.moverName()}, Status: tc.status}
			p := &Pod{Volumes: &Volumes{Kube: fake.NewClientset(pod)}}
			got, err := p.StartState(context.Background(), target)
			require.NoError(t, err)
			assert.Equal(t, tc.want.Running, got.Running)
			assert.Equal(t, tc.want.Retry, got.Retry)
			if len(tc.never) == 0 {
				assert.Empty(t, got.Never)
			}
			for _, s := range tc.never {
				assert.Contains(t, got.Never, s)
			}
		})
	}

	gone, err := (&Pod{Volumes: &Volumes{Kube: fake.NewClientset()}}).StartState(context.Background(), target)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.StartWatchResult{Never: "data mover pod movers/cairn-dm-b-x-2 was deleted before it started", Retry: true}, gone)
}
