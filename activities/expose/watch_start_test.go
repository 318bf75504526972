package expose

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// setContainer gives the attempt's data mover pod one container state.
func (f *fixture) setContainer(in v1alpha1.ExposeInput, phase corev1.PodPhase, state corev1.ContainerState) error {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	obj, err := f.kube.Tracker().Get(gvr, dmNamespace, claimName(in)+"-1")
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "datamover", State: state}}
	return f.kube.Tracker().Update(gvr, pod, dmNamespace)
}

func (f *fixture) watchStart(t *testing.T, in v1alpha1.ExposeInput) v1alpha1.StartWatchResult {
	t.Helper()
	val, err := f.env.ExecuteActivity(f.acts.WatchDataMoverStart, in)
	require.NoError(t, err)
	var res v1alpha1.StartWatchResult
	require.NoError(t, val.Get(&res))
	return res
}

// TestWatchDataMoverStartWaitsUntilThePodRunsOrCannot: the watcher keeps
// looking while the pod is created, and ends with its verdict: an image
// the node never pulls (stored in the owner's log), or a running
// container.
func TestWatchDataMoverStartWaitsUntilThePodRunsOrCannot(t *testing.T) {
	f := newFixture(t)
	f.acts.StartWatchInterval = time.Millisecond
	in := restoreInput(f.url)
	f.expose(t, in)
	require.NoError(t, f.setContainer(in, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}))
	looks := 0
	f.kube.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		// The third look finds the image the node was told never to pull.
		if looks++; looks == 3 {
			return false, nil, f.setContainer(in, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImageNeverPull", Message: "image registry.example/cairn:test not present with pull policy Never"}})
		}
		return false, nil, nil
	})
	res := f.watchStart(t, in)
	assert.Equal(t, 3, looks, "it looked again while the pod was being created, and stopped at the verdict")
	assert.False(t, res.Running)
	assert.False(t, res.Retry, "another data mover would wait on the same image")
	assert.Contains(t, res.Never, "ErrImageNeverPull")
	assert.Contains(t, res.Never, claimName(in)+"-1")
	var logged string
	for _, key := range f.logKeys(t, location.Restore("r1").LogsPrefix()) {
		data, err := f.loc.ReadAll(context.Background(), key)
		require.NoError(t, err)
		logged += string(data)
	}
	assert.Contains(t, logged, "Data mover cannot start", "the verdict is in the owner's log")

	require.NoError(t, f.setContainer(in, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}))
	assert.Equal(t, v1alpha1.StartWatchResult{Running: true}, f.watchStart(t, in))
}
