package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// extensionsFile writes an Extensions document for a worker's
// --extensions.
func extensionsFile(t *testing.T, doc string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "extensions.yaml")
	require.NoError(t, os.WriteFile(file, []byte(doc), 0o600))
	return file
}

// serveExtension runs an extension's Temporal worker in this process, on
// its task queue of the stack's Temporal, until the test ends.
func serveExtension(t *testing.T, s *stack, taskQueue string, register func(sdkworker.Worker)) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.temporalAddr})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := sdkworker.New(c, taskQueue, sdkworker.Options{})
	register(w)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

// ensureNamespace creates a namespace unless it is there.
func ensureNamespace(t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	_, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// makeConfigMaps creates ConfigMaps in a namespace, and the namespace, by name with
// their labels.
func makeConfigMaps(t *testing.T, kc kubernetes.Interface, namespace string, labels map[string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, kc, namespace)
	for name, l := range labels {
		_, err := kc.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// makeWebDeployment creates a Deployment "web" with pod spec in a
// namespace, and the namespace.
func makeWebDeployment(t *testing.T, kc kubernetes.Interface, namespace string, spec corev1.PodSpec) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, kc, namespace)
	labels := map[string]string{"app": "web"}
	_, err := kc.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// gate holds the first extension call that reaches it until release, so
// a test acts while a run's step waits on the extension.
type gate struct {
	once             sync.Once
	entered, release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

// hold lets every call but the first through at once.
func (g *gate) hold(ctx context.Context) error {
	first := false
	g.once.Do(func() { first = true })
	if !first {
		return nil
	}
	close(g.entered)
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitEntered waits until a call reached the gate; the run ending first
// fails the test.
func (g *gate) awaitEntered(t *testing.T, s *stack, workflowID string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- s.temporalC.GetWorkflow(ctx, workflowID, "").Get(ctx, nil) }()
	select {
	case <-g.entered:
	case err := <-ended:
		t.Fatalf("%s ended (%v) without calling the extension", workflowID, err)
	}
}

// awaitHeartbeat waits until a step of the run has heartbeated after
// since: what describe reads of a waiting step is then there.
func awaitHeartbeat(t *testing.T, s *stack, workflowID string, since time.Time) {
	t.Helper()
	awaitPendingActivity(t, s, workflowID, workflowID, func(pa *workflowpb.PendingActivityInfo) bool {
		return pa.GetLastHeartbeatTime().AsTime().After(since) && pa.GetHeartbeatDetails() != nil
	})
}

// awaitPendingActivity waits until a pending activity of workflowID
// (which may not have started yet) matches; the run runID ending first
// fails the test.
func awaitPendingActivity(t *testing.T, s *stack, runID, workflowID string, match func(*workflowpb.PendingActivityInfo) bool) {
	t.Helper()
	awaitWhileRunning(t, s, runID, func() bool {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if match(pa) {
				return true
			}
		}
		return false
	})
}

// awaitWhileRunning waits until happened says so; the run runID ending
// first fails the test. Temporal tells no one of a heartbeat or of an
// activity's start: the loop asks again, and its pause decides nothing.
func awaitWhileRunning(t *testing.T, s *stack, runID string, happened func() bool) {
	t.Helper()
	for !happened() {
		run, err := s.temporalC.DescribeWorkflowExecution(context.Background(), runID, "")
		require.NoError(t, err)
		require.Nil(t, run.GetWorkflowExecutionInfo().GetCloseTime(), "%s ended while it should wait", runID)
		time.Sleep(200 * time.Millisecond)
	}
}
