package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/webhook"
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
	t.Parallel()
	s := newNodeStack(t)
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	loc, err := url.Parse(s.location)
	require.NoError(t, err)
	// The worker runs as the image's non-root user and writes the location.
	require.NoError(t, os.MkdirAll(loc.Path, 0o777))
	require.NoError(t, os.Chmod(loc.Path, 0o777))

	// Temporal with mTLS, as in production: the worker and the data
	// movers get in only with the certificate from the chart's Secret.
	temporalAddr, temporalTLS := mtlsTemporal(t, s)
	// Backups encrypted at rest with the chart's key, which data mover
	// pods need too: without it they cannot start.
	key := newKey(t)
	createInstallSecrets(t, kc, temporalTLS, key)
	s.useEncryptionKey(key)

	values := []string{
		"--set", "image.repository=" + strings.Split(sandbox.CairnImage, ":")[0],
		"--set", "image.tag=" + strings.Split(sandbox.CairnImage, ":")[1],
		"--set", "image.pullPolicy=Never",
		"--set", "temporal.address=" + temporalAddr,
		"--set", "temporal.tlsSecret=temporal-tls", "--set", "temporal.tlsServerName=" + temporalServerName,
		"--set", "temporal.apiKeySecret.name=temporal-key", "--set", "location.credentialsSecret=location-credentials",
		"--set", "encryption.existingSecret=encryption-key",
		// Temporal and the API server's forwarder are on the host: host network.
		"--set", "worker.hostNetwork=true", "--set", "worker.replicas=1", "--set", "worker.healthPort=" + portOf(t, freePort(t)),
		// Data movers run as the image's user; the claims they write get
		// its group (the sandbox's CSI driver applies fsGroups).
		"--set", "dataMover.hostNetwork=true",
		"--set", "location.url=" + s.location, "--set", "location.hostPath=" + loc.Path,
		// pauses between pages: time to kill the worker mid-collection
		"--set", "worker.extraArgs={--page-interval=100ms}",
	}
	t.Cleanup(func() {
		if t.Failed() {
			logInstall(t, s)
		}
	})
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
			{"impersonate", "users", "", true},                     // runs through the API act as their caller
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

	t.Run("SIGKILL of the worker pod's process mid-collection: the backup completes with every object once", func(t *testing.T) {
		want := seedConfigMaps(t, s.cluster.Config(), "ik", seedNamespaces, seedPerNS)
		_, err := s.starter.CreateBackup(ctx, slowBackup("inst-kill", "ik"))
		require.NoError(t, err)
		waitMidConfigMaps(t, s, "inst-kill")
		pid := processPID(t, "/cairn\x00worker\x00")
		t.Logf("SIGKILL in-cluster worker process %d", pid)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		v := s.waitDone("inst-kill", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %+v", v.Status)
		assertExactlySeeded(t, s, "inst-kill", "ik", want)
		assert.Greater(t, collectRuns(t, s, "inst-kill")["configmaps"].attempt, int32(1), "the kill landed mid-collection")
		pods, err := kc.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=worker"})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		assert.Equal(t, int32(1), pods.Items[0].Status.ContainerStatuses[0].RestartCount, "the kubelet restarted the killed worker")
	})

	makeClaims(t, s, "inst", "data")
	fillVolume(t, s, "inst", "data", datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 30, SmallSize: 4096, Seed: 51})
	// Non-root data movers read what everyone may read (files only root
	// may read need dataMover.runAsRoot).
	worldReadable(t, mustVolumePath(t, s, "inst", "data"))
	want := digestVolume(t, s, "inst", "data")
	_, err = kc.CoreV1().ConfigMaps("inst").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"mode": "in-cluster"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("the in-cluster worker backs up, a data mover pod moves the data, the restore is byte-identical", func(t *testing.T) {
		_, err := s.starter.CreateBackup(ctx, moveRequest("inst-1", "inst"))
		require.NoError(t, err)
		v := s.waitDone("inst-1", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		assert.Contains(t, uploadOf(t, v.Status, "inst", "data").DataMover, "pod "+installMovers+"/")

		require.NoError(t, kc.CoreV1().Namespaces().Delete(ctx, "inst", metav1.DeleteOptions{}))
		waitNamespaceGone(t, s, "inst")
		_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "inst-r1", BackupName: "inst-1"}})
		require.NoError(t, err)
		r := s.waitRestore("inst-r1", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, s, "inst", "data"), 10), "byte-identical")
		cm, err := kc.CoreV1().ConfigMaps("inst").Get(ctx, "settings", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "in-cluster", cm.Data["mode"])
		assertSealed(t, s, location.Backup("inst-1").Resources())
		for _, name := range []string{"temporal-tls", "temporal-key", "location-credentials", "encryption-key"} {
			copied, err := kc.CoreV1().Secrets(installMovers).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err, "the worker copied %s for the data movers", name)
			assert.Equal(t, installNamespace, copied.Labels[v1alpha1.LabelCopiedFrom])
		}
	})

	t.Run("the in-cluster starter API authenticates and authorizes with the cluster", func(t *testing.T) {
		// The chart serves HTTPS by default, with a CA it made and published.
		address := net.JoinHostPort(podIP(t, kc, installNamespace, "app.kubernetes.io/component=api"), "8080")
		api := "https://" + address + "/v1/backups"
		caMap, err := kc.CoreV1().ConfigMaps(installNamespace).Get(ctx, "cairn-api-ca", metav1.GetOptions{})
		require.NoError(t, err)
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM([]byte(caMap.Data["ca.crt"])), "ConfigMap cairn-api-ca holds a PEM CA")
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: "cairn-api." + installNamespace + ".svc", MinVersion: tls.VersionTLS12}}}
		// Plain HTTP gets no answer from the API: its TLS server answers
		// 400, or resets the connection as it closes on the unread request.
		// Straight to the pod: the e2e proxy would turn a reset into a 502.
		direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
		if resp, err := direct.Get("http://" + address + "/healthz"); err == nil {
			resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is not served")
		}
		var code int
		operator := serviceAccountToken(t, kc, installNamespace, "backup-operator")
		allowInNamespace(t, kc, "inst", installNamespace, "backup-operator", rbacv1.PolicyRule{
			APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups"}, Verbs: []string{"create", "get"}})
		// The backup reads inst as the operator: it needs to view it.
		bindClusterRole(t, kc, "inst", installNamespace, "backup-operator", "view")
		waitAllowed(t, kc, "system:serviceaccount:"+installNamespace+":backup-operator",
			authzv1.ResourceAttributes{Namespace: "inst", Verb: "create", Group: v1alpha1.APIGroup, Resource: "backups"})
		waitAllowed(t, kc, "system:serviceaccount:"+installNamespace+":backup-operator",
			authzv1.ResourceAttributes{Namespace: "inst", Verb: "list", Resource: "configmaps"})
		body := `{"name":"inst-api","includedNamespaces":["inst"],"includedResources":["configmaps"]}`

		code, _ = postJSONWith(t, client, api, "", body)
		assert.Equal(t, http.StatusUnauthorized, code, "no token")
		code, e := postJSONWith(t, client, api, operator, `{"name":"system-api","includedNamespaces":["kube-system"]}`)
		assert.Equal(t, http.StatusForbidden, code, "a namespace the operator may not back up: %+v", e)
		code, e = postJSONWith(t, client, api, operator, body)
		require.Equal(t, http.StatusCreated, code, "%+v", e)
		v := s.waitDone("inst-api", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		assert.Positive(t, v.Status.ItemsDone, "the in-cluster worker ran the API's backup")
	})

	t.Run("a team's Backup resource runs as its creator through the chart's webhook, in its namespace only", func(t *testing.T) {
		const team = "inst-team"
		defer func() {
			if t.Failed() {
				logInstall(t, s)
			}
		}()
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}, metav1.CreateOptions{})
		require.NoError(t, err)
		admin := resourceClient(t, s.cluster.Config())
		member := teamMember(t, s, kc, team, "member")
		waitWebhookInForce(t, kc, admin, team, "cairn-resources", webhook.Propagation)
		err = member.Create(ctx, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: team},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{team, "inst"}}})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		require.NoError(t, member.Create(ctx, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: team}}))
		b := waitResourceDone(t, admin, &v1alpha1.BackupList{}, team, "mine").(*v1alpha1.Backup)
		require.Equal(t, v1alpha1.PhaseCompleted, b.Status.Phase, "%+v", b.Status)
		assert.Contains(t, b.Status.ActingAs, "system:serviceaccount:"+team+":member")
		assert.Equal(t, team+".mine", b.Status.RunName)
	})

	t.Run("helm upgrade keeps the repository password, the API's CA and the backups restorable", func(t *testing.T) {
		apiCA := func() string {
			m, err := kc.CoreV1().ConfigMaps(installNamespace).Get(ctx, "cairn-api-ca", metav1.GetOptions{})
			require.NoError(t, err)
			return m.Data["ca.crt"]
		}
		caBefore := apiCA()
		helm(t, s, append([]string{"upgrade", "cairn", chartDir(t), "--namespace", installNamespace, "--wait", "--timeout", "3m",
			"--set", "worker.logLevel=debug"}, values...)...)
		assert.Equal(t, password, repositoryPassword(t, s))
		assert.Equal(t, caBefore, apiCA(), "clients keep trusting the API")
		_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "inst-r2", BackupName: "inst-1",
			NamespaceMapping: map[string]string{"inst": "inst-copy"}}})
		require.NoError(t, err)
		r := s.waitRestore("inst-r2", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
		assert.Empty(t, datatree.Diff(want, digestVolume(t, s, "inst-copy", "data"), 10), "restored with the kept password")
	})

	t.Run("a wrong Temporal address: the new worker stays unready, its log names the address", func(t *testing.T) {
		wrong := "127.0.0.1:1"
		helm(t, s, append(append([]string{"upgrade", "cairn", chartDir(t), "--namespace", installNamespace}, values...),
			"--set", "temporal.address="+wrong)...)
		pod := waitPodWithTemporal(t, kc, installNamespace, "app.kubernetes.io/component=worker", wrong)
		line := followLogUntil(t, kc, pod, "Temporal is not reachable")
		assert.Contains(t, line, wrong, "the log names the address")
		// The probe reached the worker, which answered "not ready".
		waitPodEvent(t, kc, pod, "Unhealthy", "HTTP probe failed with statuscode: 503")
		pod, err := kc.CoreV1().Pods(installNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, pod.Status.ContainerStatuses, 1)
		assert.False(t, pod.Status.ContainerStatuses[0].Ready)
		assert.Zero(t, pod.Status.ContainerStatuses[0].RestartCount, "it waits for Temporal, alive, instead of restarting")
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

// worldReadable makes every file under dir readable, and every
// directory searchable, by everyone.
func worldReadable(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		add := fs.FileMode(0o444)
		if d.IsDir() {
			add = 0o555
		}
		return os.Chmod(p, info.Mode().Perm()|add)
	}))
}

// processPID is the one process of this machine whose command line
// starts with prefix (NUL-separated arguments).
func processPID(t *testing.T, prefix string) int {
	t.Helper()
	return processMatching(t, func(cmdline string) bool { return strings.HasPrefix(cmdline, prefix) }, strconv.Quote(prefix))
}

// processMatching is the one process whose NUL-separated command line
// matches, named what in the failure.
func processMatching(t *testing.T, match func(cmdline string) bool, what string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !match(string(cmdline)) {
			continue
		}
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, 1, "one process %s", what)
	return pids[0]
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

// logInstall prints the install's pods, their logs and the data movers'
// events, and the state of the backups, to explain a failure.
func logInstall(t *testing.T, s *stack) {
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	for _, ns := range []string{installNamespace, installMovers} {
		pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			t.Logf("pod %s/%s: %s %+v", ns, p.Name, p.Status.Phase, p.Status.ContainerStatuses)
			if logs, err := kc.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: new(int64(30))}).DoRaw(ctx); err == nil {
				t.Logf("--- %s/%s log ---\n%s", ns, p.Name, logs)
			}
		}
		if events, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, e := range events.Items {
				t.Logf("event %s/%s %s: %s", ns, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	if list, err := s.starter.ListBackups(ctx); err == nil {
		for _, b := range list.Items {
			if v, err := s.starter.GetBackup(ctx, b.Name); err == nil && v.Status != nil {
				for _, op := range v.Status.Operations {
					t.Logf("backup %s operation %s: %s %s %s", b.Name, op.ID, op.Phase, op.Progress, op.Error)
				}
			}
		}
	}
}

// waitNamespaceGone watches a deleted namespace until it is gone.
func waitNamespaceGone(t *testing.T, s *stack, ns string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a stuck deletion, not a verdict
	defer cancel()
	lw := cache.NewFilteredListWatchFromClient(kc.CoreV1().RESTClient(), "namespaces", "", func(o *metav1.ListOptions) {
		o.FieldSelector = "metadata.name=" + ns
	})
	gone := func(store cache.Store) (bool, error) {
		_, exists, err := store.GetByKey(ns)
		return !exists, err
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Namespace{}, gone, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Deleted, nil
	})
	require.NoError(t, err, "namespace %s not gone", ns)
}

// TestWorkerWithoutItsRepositorySecretDoesNotStart: a worker told to
// read the repository password from a Secret that is not there exits at
// once, naming the Secret, instead of failing every data move later.
func TestWorkerWithoutItsRepositorySecretDoesNotStart(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	_, stderr, code := runCLI(t, "worker", "--temporal-address", s.temporalAddr, "--kubeconfig", s.cluster.KubeconfigPath(),
		"--data-dir", t.TempDir(), "--datamover-namespace", "default", "--repository-password-secret", "not-there")
	assert.Equal(t, 1, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, `repository password Secret default/not-there`)
	assert.Contains(t, stderr, `not found`)
}
