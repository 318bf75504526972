package e2e

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// createInstallSecrets makes the Secrets the chart's values name, in the
// install's namespace: the Temporal client certificate, an API key and
// the location's credentials.
func createInstallSecrets(t *testing.T, kc kubernetes.Interface, temporalTLS map[string][]byte, encryptionKey []byte) {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "temporal-tls"}, Type: corev1.SecretTypeTLS, Data: temporalTLS},
		{ObjectMeta: metav1.ObjectMeta{Name: "temporal-key"}, StringData: map[string]string{"api-key": "test-api-key"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "location-credentials"}, StringData: map[string]string{"AWS_REGION": "us-east-1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "encryption-key"}, Data: map[string][]byte{"key.txt": encryptionKey}},
	} {
		_, err := kc.CoreV1().Secrets(installNamespace).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// waitPodWithTemporal waits until a pod of selector whose env has
// CAIRN_TEMPORAL_ADDRESS=address runs its container.
func waitPodWithTemporal(t *testing.T, kc kubernetes.Interface, ns, selector, address string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound for a stuck rollout, not a verdict
	defer cancel()
	pods := cache.NewFilteredListWatchFromClient(kc.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	var pod *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, pods, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
			return false, nil
		}
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == "CAIRN_TEMPORAL_ADDRESS" && e.Value == address {
				pod = p
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "no pod of %s with Temporal at %s", selector, address)
	return pod
}

// followLogUntil follows the log of a pod whose container runs until a
// line contains text, and returns the line.
func followLogUntil(t *testing.T, kc kubernetes.Interface, pod *corev1.Pod, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound for a pod that never logs it, not a verdict
	defer cancel()
	stream, err := kc.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	require.NoError(t, err, "log of %s", pod.Name)
	defer stream.Close()
	lines := bufio.NewScanner(stream)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		if strings.Contains(lines.Text(), text) {
			return lines.Text()
		}
	}
	require.Failf(t, "log ended", "%s never logged %q: %v", pod.Name, text, lines.Err())
	return ""
}

// waitPodEvent waits for an event of reason about the pod whose message
// contains text.
func waitPodEvent(t *testing.T, kc kubernetes.Interface, pod *corev1.Pod, reason, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound for an event that never comes, not a verdict
	defer cancel()
	events := cache.NewFilteredListWatchFromClient(kc.CoreV1().RESTClient(), "events", pod.Namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = "involvedObject.name=" + pod.Name + ",reason=" + reason
	})
	_, err := watchtools.UntilWithSync(ctx, events, &corev1.Event{}, nil, func(ev watch.Event) (bool, error) {
		e, ok := ev.Object.(*corev1.Event)
		return ok && strings.Contains(e.Message, text), nil
	})
	require.NoError(t, err, "no %s event %q for pod %s", reason, text, pod.Name)
}

// portOf is the port of host:port.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// podIP is the address of the one running pod of selector.
func podIP(t *testing.T, kc kubernetes.Interface, ns, selector string) string {
	t.Helper()
	pods, err := kc.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector, FieldSelector: "status.phase=Running"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1, "one running pod of %s", selector)
	return pods.Items[0].Status.PodIP
}

// allowInNamespace gives the service account saNamespace/sa rule in ns.
func allowInNamespace(t *testing.T, kc kubernetes.Interface, ns, saNamespace, sa string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name := "cairn-" + sa
	_, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: saNamespace, Name: sa}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
