package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/remotecommand"
	watchtools "k8s.io/client-go/tools/watch"
)

// nodeBinDir is the bin dir of a test that starts a node: the node's
// parts are required, not skipped over (`make sandbox-bins` makes them).
func nodeBinDir(t *testing.T) string {
	t.Helper()
	dir := testBinDir(t)
	require.NoError(t, checkNodeTools(dir))
	return dir
}

// TestNodeRunsPods starts a sandbox with its node: a pod runs with an
// address on the bridge, its log and exec work through the API server,
// a Service's ClusterIP reaches it, pods reach the API server with their
// service account (in-cluster config), and the kubelet restarts a killed
// container. Stop leaves nothing of the node behind.
func TestNodeRunsPods(t *testing.T) {
	takeNodeTurn(t)
	binDir := nodeBinDir(t)
	dataDir := t.TempDir()
	ctx := context.Background()
	hostState := hostStateOfNodes(t)
	// CairnImage runs a stand-in for cairn here: a program that asks the
	// API server who it is, with client-go's in-cluster config.
	c := startClusterWith(t, Options{BinDir: binDir, DataDir: dataDir, Node: true, CairnBinary: buildInCluster(t)})
	cs := clientset(t, c)

	for name, hostNetwork := range map[string]bool{"in-cluster": false, "in-cluster-host-network": true} {
		_, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, HostNetwork: hostNetwork,
				Containers: []corev1.Container{{Name: "main", Image: CairnImage, ImagePullPolicy: corev1.PullNever}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"in-cluster", "in-cluster-host-network"} {
		done := waitPod(t, cs, name, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		logs, err := cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		require.Equal(t, corev1.PodSucceeded, done.Status.Phase, "%s: %s", name, logs)
		assert.Equal(t, fmt.Sprintf("host=https://%s:443 user=system:serviceaccount:default:default\n", KubernetesServiceIP),
			string(logs), "%s reaches the API server as the kubernetes Service, with its token, and trusts its CA", name)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", "echo served-by-web > /tmp/index.html && echo web-started && " +
				"while true; do printf 'HTTP/1.0 200 OK\\r\\n\\r\\nserved-by-web\\n' | nc -l -p 8080; done"},
		}}},
	}
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	running := waitPod(t, cs, "web", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	ip, err := netip.ParseAddr(running.Status.PodIP)
	require.NoError(t, err)
	assert.True(t, netip.MustParsePrefix(PodSubnet).Contains(ip), "pod address %s is on the bridge", ip)
	assert.Equal(t, NodeName, running.Spec.NodeName)

	logs, err := cs.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err, "kubectl logs")
	assert.Contains(t, string(logs), "web-started")

	out := execInPod(t, c, "default", "web", "cat", "/tmp/index.html")
	assert.Equal(t, "served-by-web\n", out, "kubectl exec")

	// What pods can reach, the kubelet's port on the bridge, lets in only
	// the API server.
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := anonymous.Get(fmt.Sprintf("https://%s:10250/runningpods/", NodeIP))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the kubelet refuses anonymous callers")

	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	body := waitHTTP(t, fmt.Sprintf("http://%s:80/index.html", svc.Spec.ClusterIP))
	assert.Equal(t, "served-by-web\n", body, "the Service's ClusterIP reaches the pod (kube-proxy)")

	killContainer(t, "echo web-started")
	waitPod(t, cs, "web", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].RestartCount >= 1 && s[0].State.Running != nil
	})

	require.NoError(t, c.Stop())
	assertNoNodeLeftovers(t, dataDir)
	assertNoNewHostState(t, hostState)
}

// buildInCluster builds testdata/incluster, static, for CairnImage.
func buildInCluster(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "incluster")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/incluster")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// hostStateOfNodes lists the files nodes keep outside their directory.
// assertNoNewHostState: what a node leaves outside its data dir (shim
// sockets, CNI results, pod logs) is gone after Stop. Entries that were
// there before, left by an earlier run, may stay or go: Stop removes the
// kubelet's device plugin directory whoever wrote it.
func assertNoNewHostState(t *testing.T, before []string) {
	t.Helper()
	assert.Subset(t, before, hostStateOfNodes(t), "shim sockets, CNI results and pod logs outside the data dir")
}

func hostStateOfNodes(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{shimSocketDir, cniResultsDir, "/var/log/pods", devicePluginDir, "/run/containerd/runc"} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			require.NoError(t, err)
		}
		for _, e := range entries {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files
}

// TestNodeStartCleansUpAfterACrash: a sandbox with a running pod dies
// by SIGKILL, leaving the pod's shim, mounts, network namespace and
// cgroups behind. The next Start on its data dir cleans them up and runs
// pods again, and its Stop leaves nothing.
func TestNodeStartCleansUpAfterACrash(t *testing.T) {
	takeNodeTurn(t)
	binDir := nodeBinDir(t)
	dataDir := t.TempDir()
	hostState := hostStateOfNodes(t)
	helper := startHelper(t, binDir, dataDir, helperNodeEnv+"=1")
	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	mounts, err := mountsUnder(dataDir)
	require.NoError(t, err)
	kubeletMounts, err := mountsUnder(nodeKubeletDir)
	require.NoError(t, err)
	require.NotEmpty(t, append(mounts, kubeletMounts...), "the dead sandbox left its pod's mounts")
	require.NotEmpty(t, nodeCgroups(), "and its cgroups")

	c := startClusterWith(t, Options{BinDir: binDir, DataDir: dataDir, Node: true})
	require.NoError(t, runSleeper(c), "the node runs pods again")
	require.NoError(t, c.Stop())
	assertNoNodeLeftovers(t, dataDir)
	assertNoNewHostState(t, hostState)
}

// runSleeper runs a pod that sleeps, and waits until it is Running.
func runSleeper(c *Cluster) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sleep", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sleep", "3600"}}}}}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err := podWhen(ctx, c.cs, "sleeper", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	return err
}

// podWhen watches pod name in namespace default until cond holds for it.
func podWhen(ctx context.Context, cs kubernetes.Interface, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "default", func(o *metav1.ListOptions) {
		o.FieldSelector = "metadata.name=" + name
	})
	ev, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		return ok && cond(p), nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	return ev.Object.(*corev1.Pod), nil
}

func waitPod(t *testing.T, cs kubernetes.Interface, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a broken node, not a verdict
	defer cancel()
	p, err := podWhen(ctx, cs, name, cond)
	require.NoError(t, err)
	return p
}

func execInPod(t *testing.T, c *Cluster, ns, pod string, command ...string) string {
	t.Helper()
	req := clientset(t, c).CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exe, err := remotecommand.NewSPDYExecutor(c.Config(), "POST", req.URL())
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, exe.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}), "stderr: %s", stderr.String())
	return stdout.String()
}

// waitHTTP gets url until it answers 200 (kube-proxy writes its rules a
// moment after the Service's endpoints appear).
func waitHTTP(t *testing.T, url string) string {
	t.Helper()
	// A new connection each time: one made before kube-proxy's rules
	// would stay where it went.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := client.Get(url)
		if err == nil {
			data, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(data)
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		require.True(t, time.Now().Before(deadline), "GET %s: %v", url, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// killContainer SIGKILLs, from the host, the container process whose
// command line has marker. The shell forks subshells for its pipeline
// (busybox's printf is a builtin, so they keep its command line): the
// container's process is the matching one whose parent does not match.
func killContainer(t *testing.T, marker string) {
	t.Helper()
	pids := pidsMatching(func(cmdline string) bool { return strings.Contains(cmdline, marker) })
	var roots []int
	for _, pid := range pids {
		// A subshell that ended since the listing has no parent left to
		// read (0): it is not the container's process either.
		if ppid := parentPID(t, pid); ppid != 0 && !slices.Contains(pids, ppid) {
			roots = append(roots, pid)
		}
	}
	require.Len(t, roots, 1, "one process runs %q (matching: %v)", marker, pids)
	require.NoError(t, syscall.Kill(roots[0], syscall.SIGKILL))
}

// parentPID is pid's parent, from /proc/<pid>/stat (its fourth field,
// after the command in parentheses); 0 for a process gone meanwhile.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	return ppid
}

// assertNoNodeLeftovers: no live shim of the node's containerd, no mount
// under the data dir, no bridge, no iptables chain, no cgroup.
func assertNoNodeLeftovers(t *testing.T, dataDir string) {
	t.Helper()
	socket := (&node{dir: filepath.Join(dataDir, nodeDir)}).socket()
	assert.Empty(t, pidsMatching(shimOf(socket)), "containerd shims left")
	for _, dir := range []string{dataDir, nodeKubeletDir} {
		mounts, err := mountsUnder(dir)
		require.NoError(t, err)
		assert.Empty(t, mounts, "mounts under %s", dir)
	}
	assert.NoDirExists(t, nodeKubeletDir)
	_, err := os.Stat("/sys/class/net/" + NodeBridge)
	assert.True(t, os.IsNotExist(err), "bridge %s is left", NodeBridge)
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command("iptables", "-w", "-t", table, "-S").Output()
		require.NoError(t, err)
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "-N" {
				assert.False(t, nodeOwnsChain(f[1]), "iptables chain %s (%s) is left", f[1], table)
			}
		}
	}
	assert.Empty(t, nodeCgroups(), "cgroups of the node")
}

// TestNodeMountsCSIVolumes: with the CSI stack, the driver registers with
// the node's kubelet; a pod's cairn-csi claim is the volume's directory,
// so what the pod writes lands in the driver's state, and a read-only
// mount refuses writes.
func TestNodeMountsCSIVolumes(t *testing.T) {
	takeNodeTurn(t)
	binDir := nodeBinDir(t)
	require.NoError(t, CheckCSIBinDir(binDir))
	dataDir := t.TempDir()
	ctx := context.Background()
	c := startClusterWith(t, Options{BinDir: binDir, DataDir: dataDir, Node: true, CSI: true})
	cs := clientset(t, c)
	class := CSIStorageClass
	_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	mounting := func(name string, readOnly bool, script string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: "data", ReadOnly: readOnly}}}},
		}}
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, mounting("writer", false, "echo written-by-a-pod > /data/hello.txt"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitPod(t, cs, "writer", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	dir, err := c.VolumePath(ctx, "default", "data")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	require.NoError(t, err, "the pod's file is in the driver's volume directory")
	assert.Equal(t, "written-by-a-pod\n", string(data))

	_, err = cs.CoreV1().Pods("default").Create(ctx, mounting("reader", true,
		"cat /data/hello.txt && if touch /data/other; then exit 3; fi"), metav1.CreateOptions{})
	require.NoError(t, err)
	reader := waitPod(t, cs, "reader", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	assert.Equal(t, corev1.PodSucceeded, reader.Status.Phase, "a read-only mount reads and refuses a write")
	logs, err := cs.CoreV1().Pods("default").GetLogs("reader", &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(logs), "written-by-a-pod")

	require.NoError(t, c.Stop())
	assertNoNodeLeftovers(t, dataDir)
}

// takeNodeTurn holds the machine's node turn until the test ends, so a
// node test of another package (tests/e2e) that runs meanwhile neither
// fails to start its node nor leaves its pods in what this test looks at.
func takeNodeTurn(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a bound for a stuck holder, not a verdict
	defer cancel()
	release, err := TakeNodeTurn(ctx)
	require.NoError(t, err)
	t.Cleanup(release)
}
