package e2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/sandbox"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

const (
	installNamespace = "cairn-system"
	installMovers    = "cairn-datamovers"
)

// TestHelmInstallRunsCairnInTheCluster installs cairn with its Helm chart
// into the sandbox, with cairn's image on the node and Temporal on the
// host: the in-cluster worker, with only the chart's roles, backs up a
// namespace whose claim's data a data mover pod moves, and restores it
// byte-identical after the namespace is deleted. An upgrade keeps the
// repository password and the backups restorable; an uninstall leaves
// the backups in the location.
func TestHelmInstallRunsCairnInTheCluster(t *testing.T) {
	s := newNodeStack(t)
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	loc, err := url.Parse(s.location)
	require.NoError(t, err)
	// The worker runs as the image's non-root user and writes the location.
	require.NoError(t, os.MkdirAll(loc.Path, 0o777))
	require.NoError(t, os.Chmod(loc.Path, 0o777))

	values := []string{
		"--set", "image.repository=" + strings.Split(sandbox.CairnImage, ":")[0],
		"--set", "image.tag=" + strings.Split(sandbox.CairnImage, ":")[1],
		"--set", "image.pullPolicy=Never",
		"--set", "temporal.address=" + s.temporalAddr,
		// Temporal and the API server's forwarder are on the host: host network.
		"--set", "worker.hostNetwork=true", "--set", "worker.replicas=1",
		"--set", "dataMover.hostNetwork=true", "--set", "dataMover.runAsRoot=true",
		"--set", "location.url=" + s.location, "--set", "location.hostPath=" + loc.Path,
		"--set", "api.enabled=false",
	}
	helm(t, s, append([]string{"install", "cairn", chartDir(t), "--namespace", installNamespace, "--create-namespace",
		"--wait", "--timeout", "3m"}, values...)...)
	password := repositoryPassword(t, s)

	t.Run("the worker's service account has the chart's roles and no more", func(t *testing.T) {
		for _, c := range []struct {
			verb, resource, ns string
			allowed            bool
		}{
			{"list", "secrets", "kube-system", true},               // backups read every object
			{"create", "pods", installMovers, true},                // data movers
			{"delete", "pods", installMovers, true},                // and their cleanup
			{"delete", "pods", "default", false},                   // nothing else is deleted
			{"delete", "namespaces", "", false},                    // nor namespaces
			{"delete", "persistentvolumeclaims", "default", false}, // nor claims outside the movers'
			{"impersonate", "users", "", false},                    // no escalation
			{"escalate", "clusterroles", "", false},
		} {
			review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:" + installNamespace + ":cairn-worker",
				ResourceAttributes: &authzv1.ResourceAttributes{Verb: c.verb, Resource: c.resource, Namespace: c.ns,
					Group: map[bool]string{true: "rbac.authorization.k8s.io"}[c.resource == "clusterroles"]},
			}}, metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, c.allowed, review.Status.Allowed, "%s %s in %q", c.verb, c.resource, c.ns)
		}
	})

	makeClaims(t, s, "inst", "data")
	want := fillVolume(t, s, "inst", "data", datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 30, SmallSize: 4096, Seed: 51})
	_, err = kc.CoreV1().ConfigMaps("inst").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"mode": "in-cluster"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("the in-cluster worker backs up, a data mover pod moves the data, the restore is byte-identical", func(t *testing.T) {
		_, err := s.starter.CreateBackup(ctx, moveRequest("inst-1", "inst"))
		require.NoError(t, err)
		v := s.waitDone("inst-1", 4*time.Minute)
		require.Equal(t, workflows.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		assert.Contains(t, uploadOf(t, v.Status, "inst", "data").DataMover, "pod "+installMovers+"/")

		require.NoError(t, kc.CoreV1().Namespaces().Delete(ctx, "inst", metav1.DeleteOptions{}))
		waitNamespaceGone(t, s, "inst")
		_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: workflows.RestoreSpec{Name: "inst-r1", BackupName: "inst-1"}})
		require.NoError(t, err)
		r := s.waitRestore("inst-r1", 4*time.Minute)
		require.Equal(t, workflows.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, s, "inst", "data"), 10), "byte-identical")
		cm, err := kc.CoreV1().ConfigMaps("inst").Get(ctx, "settings", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "in-cluster", cm.Data["mode"])
	})

	t.Run("helm upgrade keeps the repository password and the backups restorable", func(t *testing.T) {
		helm(t, s, append([]string{"upgrade", "cairn", chartDir(t), "--namespace", installNamespace, "--wait", "--timeout", "3m",
			"--set", "worker.logLevel=debug"}, values...)...)
		assert.Equal(t, password, repositoryPassword(t, s))
		_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: workflows.RestoreSpec{Name: "inst-r2", BackupName: "inst-1",
			NamespaceMapping: map[string]string{"inst": "inst-copy"}}})
		require.NoError(t, err)
		r := s.waitRestore("inst-r2", 4*time.Minute)
		require.Equal(t, workflows.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, s, "inst-copy", "data"), 10), "restored with the kept password")
	})

	t.Run("helm uninstall leaves the backups and the repository password", func(t *testing.T) {
		helm(t, s, "uninstall", "cairn", "--namespace", installNamespace, "--wait", "--timeout", "3m")
		list, err := s.starter.ListBackups(ctx)
		require.NoError(t, err)
		var names []string
		for _, b := range list.Items {
			names = append(names, b.Name)
		}
		assert.Contains(t, names, "inst-1")
		assert.Equal(t, password, repositoryPassword(t, s), "the Secret is kept (helm.sh/resource-policy: keep)")
		_, err = kc.AppsV1().Deployments(installNamespace).Get(ctx, "cairn-worker", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the worker is gone: %v", err)
	})
}

// helm runs the helm `make tools` builds against the sandbox.
func helm(t *testing.T, s *stack, args ...string) {
	t.Helper()
	bin, err := filepath.Abs("../../.cache/tools/helm")
	require.NoError(t, err)
	require.FileExists(t, bin, "helm is built by `make tools`")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", s.cluster.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		logInstall(t, s)
	}
	require.NoError(t, err, "helm %s: %s", strings.Join(args, " "), out)
}

func chartDir(t *testing.T) string {
	dir, err := filepath.Abs("../../deploy/chart")
	require.NoError(t, err)
	return dir
}

func repositoryPassword(t *testing.T, s *stack) string {
	t.Helper()
	sec, err := fastClient(t, s.cluster.Config()).CoreV1().Secrets(installMovers).Get(context.Background(), "cairn-repository", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, sec.Data["repository-password"])
	return string(sec.Data["repository-password"])
}

// logInstall prints the install's pods and the worker's log, to explain
// a failure.
func logInstall(t *testing.T, s *stack) {
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	pods, err := kc.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s: %s %+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		if logs, err := kc.CoreV1().Pods(installNamespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: new(int64(40))}).DoRaw(ctx); err == nil {
			t.Logf("--- %s log ---\n%s", p.Name, logs)
		}
	}
}

// waitNamespaceGone waits until a deleted namespace is gone.
func waitNamespaceGone(t *testing.T, s *stack, ns string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := kc.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		require.True(t, time.Now().Before(deadline), "namespace %s not gone: %v", ns, err)
		time.Sleep(200 * time.Millisecond)
	}
}
