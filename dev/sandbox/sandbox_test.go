package sandbox

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const wantVersion = "v1.35.4"

// testBinDir returns the bin dir, or skips the test if the binaries are
// not built (`make test` builds them first).
func testBinDir(t *testing.T) string { return binDirFor(t, false) }

// binDirFor returns the bin dir, or skips the test if the binaries it
// needs (with the CSI stack's, if csi) are not built.
func binDirFor(t *testing.T, csi bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a sandbox cluster")
	}
	dir, err := DefaultBinDir()
	if err != nil {
		t.Skipf("sandbox binaries: %v", err)
	}
	check := CheckBinDir
	if csi {
		check = CheckCSIBinDir
	}
	if err := check(dir); err != nil {
		t.Skipf("%v; `make sandbox-bins` builds them", err)
	}
	return dir
}

func startTestCluster(t *testing.T, binDir, dataDir string) *Cluster {
	t.Helper()
	return startClusterWith(t, Options{BinDir: binDir, DataDir: dataDir})
}

// startClusterWith starts a cluster logging to the test, stopped when the
// test ends.
func startClusterWith(t *testing.T, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	opts.Log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	c, err := Start(ctx, opts)
	require.NoError(t, err)
	t.Logf("Start (CSI %t) took %s", opts.CSI, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	return c
}

func clientset(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config())
	require.NoError(t, err)
	return cs
}

func TestCluster(t *testing.T) {
	binDir := testBinDir(t)
	dataDir := t.TempDir()
	c := startTestCluster(t, binDir, dataDir)
	cs := clientset(t, c)
	ctx := context.Background()

	t.Run("version and loopback", func(t *testing.T) {
		v, err := cs.Discovery().ServerVersion()
		require.NoError(t, err)
		require.Equal(t, wantVersion, v.GitVersion)
		require.True(t, strings.HasPrefix(c.Config().Host, "https://127.0.0.1:"), c.Config().Host)
	})

	t.Run("kubeconfig", func(t *testing.T) {
		require.Equal(t, filepath.Join(dataDir, "kubeconfig"), c.KubeconfigPath())
		fi, err := os.Stat(c.KubeconfigPath())
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
		require.NoError(t, err)
		kc, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = kc.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		require.NoError(t, err)
		review, err := kc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, AdminUser, review.Status.UserInfo.Username)
		require.Contains(t, review.Status.UserInfo.Groups, "system:masters")
	})

	t.Run("namespace deletion", func(t *testing.T) {
		ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Secrets(ns.Name).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)

		start := time.Now()
		require.NoError(t, cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 100*time.Millisecond, "namespace %s not deleted", ns.Name)
		t.Logf("namespace with a ConfigMap and a Secret deleted in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("garbage collection", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, cs.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 100*time.Millisecond, "dependent not garbage collected")
		t.Logf("dependent garbage collected in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("service account token", func(t *testing.T) {
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "robot"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Annotations: map[string]string{
				corev1.ServiceAccountNameKey: "robot",
			}},
			Type: corev1.SecretTypeServiceAccountToken,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			s, err := cs.CoreV1().Secrets("default").Get(ctx, "robot-token", metav1.GetOptions{})
			return err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 && len(s.Data[corev1.ServiceAccountRootCAKey]) > 0
		}, 30*time.Second, 100*time.Millisecond, "token controller did not fill the secret")
	})

	t.Run("pv binding", func(t *testing.T) {
		size := resource.MustParse("1Gi")
		_, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-manual"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName:       "manual",
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nowhere"}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		class := "manual"
		_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "claim"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		start := time.Now()
		require.Eventually(t, func() bool {
			pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "claim", metav1.GetOptions{})
			return err == nil && pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == "pv-manual"
		}, 30*time.Second, 100*time.Millisecond, "claim not bound")
		t.Logf("claim bound in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("data dir in use", func(t *testing.T) {
		_, err := Start(ctx, Options{BinDir: binDir, DataDir: dataDir})
		require.ErrorContains(t, err, "in use")
	})

	t.Run("side by side", func(t *testing.T) {
		other := startTestCluster(t, binDir, t.TempDir())
		require.NotEqual(t, c.Config().Host, other.Config().Host)
		require.NotEqual(t, c.KubeconfigPath(), other.KubeconfigPath())
		ocs := clientset(t, other)
		_, err := ocs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "only-in-other"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Namespaces().Get(ctx, "only-in-other", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "namespace leaked between clusters: %v", err)
		v, err := ocs.Discovery().ServerVersion()
		require.NoError(t, err)
		require.Equal(t, wantVersion, v.GitVersion)
	})

	t.Run("stop", func(t *testing.T) {
		start := time.Now()
		require.NoError(t, c.Stop())
		t.Logf("Stop took %s", time.Since(start).Round(time.Millisecond))
		require.NoError(t, c.Stop(), "Stop is idempotent")
		if runtime.GOOS == "linux" {
			require.Empty(t, processesUsing(t, dataDir), "processes left after Stop")
		}
	})
}

func TestRestartKeepsData(t *testing.T) {
	binDir := testBinDir(t)
	dataDir := t.TempDir()
	ctx := context.Background()

	first := startTestCluster(t, binDir, dataDir)
	_, err := clientset(t, first).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, first.Stop())

	second := startTestCluster(t, binDir, dataDir)
	_, err = clientset(t, second).CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	require.NoError(t, err, "etcd data did not survive a restart")
}

// helperEnv makes the test binary, re-executed by
// TestNoProcessesLeftWhenParentDies, start a cluster and wait to be killed.
// helperCSIEnv makes it start the cluster with Options.CSI, helperNodeEnv
// with Options.Node and a running pod.
const (
	helperEnv     = "CAIRN_SANDBOX_TEST_HELPER_DATA_DIR"
	helperCSIEnv  = "CAIRN_SANDBOX_TEST_HELPER_CSI"
	helperNodeEnv = "CAIRN_SANDBOX_TEST_HELPER_NODE"
)

func TestHelperProcess(t *testing.T) {
	dataDir := os.Getenv(helperEnv)
	if dataDir == "" {
		t.Skip("helper for TestNoProcessesLeftWhenParentDies")
	}
	node := os.Getenv(helperNodeEnv) != ""
	c, err := Start(context.Background(), Options{BinDir: os.Getenv(BinDirEnv), DataDir: dataDir, CSI: os.Getenv(helperCSIEnv) != "", Node: node})
	if err == nil && node {
		err = runSleeper(c)
	}
	if err != nil {
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		os.Exit(1)
	}
	_ = c // deliberately never stopped
	os.Stdout.WriteString("READY\n")
	time.Sleep(10 * time.Minute)
}

func TestNoProcessesLeftWhenParentDies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on Pdeathsig and /proc")
	}
	t.Run("control plane", func(t *testing.T) {
		testNoProcessesLeftWhenParentDies(t, testBinDir(t), false, 3) // etcd, kube-apiserver, kube-controller-manager
	})
	t.Run("csi", func(t *testing.T) {
		testNoProcessesLeftWhenParentDies(t, testCSIBinDir(t), true, 7) // and the driver and three sidecars
	})
}

func testNoProcessesLeftWhenParentDies(t *testing.T, binDir string, csi bool, want int) {
	dataDir := t.TempDir()
	env := []string{}
	if csi {
		env = append(env, helperCSIEnv+"=1")
	}
	helper := startHelper(t, binDir, dataDir, env...)
	require.Len(t, processesUsing(t, dataDir), want, "the sandbox's components: %v", processesUsing(t, dataDir))

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	_ = helper.Wait()
	require.Eventually(t, func() bool { return len(processesUsing(t, dataDir)) == 0 },
		2*time.Minute, 100*time.Millisecond, "components outlived their parent: %v", processesUsing(t, dataDir))
}

// startHelper re-executes the test binary as TestHelperProcess with env,
// and returns once its cluster is up.
func startHelper(t *testing.T, binDir, dataDir string, env ...string) *exec.Cmd {
	t.Helper()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	helper.Env = append(append(os.Environ(), helperEnv+"="+dataDir, BinDirEnv+"="+binDir), env...)
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "READY") || strings.HasPrefix(l, "ERROR") {
				lines <- l
				return
			}
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		require.Equal(t, "READY", l)
	case <-time.After(3 * time.Minute):
		t.Fatal("helper did not start a cluster")
	}
	return helper
}

// processesUsing returns the live processes whose command line mentions dir.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) { // a zombie's cmdline is empty
			continue
		}
		found = append(found, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

func TestDefaultBinDir(t *testing.T) {
	t.Run("env", func(t *testing.T) {
		t.Setenv(BinDirEnv, "/opt/kube")
		dir, err := DefaultBinDir()
		require.NoError(t, err)
		require.Equal(t, "/opt/kube", dir)
	})
	t.Run("repo root", func(t *testing.T) {
		t.Setenv(BinDirEnv, "")
		dir, err := DefaultBinDir()
		require.NoError(t, err)
		root, err := filepath.Abs("../..")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(root, ".cache", "kube", "bin"), dir)
	})
	t.Run("skips other modules", func(t *testing.T) {
		root := t.TempDir()
		nested := filepath.Join(root, "tests", "kube", "deeper")
		require.NoError(t, os.MkdirAll(nested, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("// x\nmodule github.com/cairn-backup/cairn // c\n\ngo 1.26\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(root, "tests", "kube", "go.mod"), []byte("module github.com/cairn-backup/cairn/tests/kube\n"), 0o644))
		got, err := findRepoRoot(nested)
		require.NoError(t, err)
		require.Equal(t, root, got)
	})
	t.Run("not found", func(t *testing.T) {
		_, err := findRepoRoot(t.TempDir())
		require.ErrorContains(t, err, BinDirEnv)
	})
	t.Run("missing binaries", func(t *testing.T) {
		err := CheckBinDir(t.TempDir())
		require.True(t, errors.Is(err, ErrMissingBinaries), err)
		_, err = Start(context.Background(), Options{BinDir: t.TempDir(), DataDir: t.TempDir()})
		require.ErrorIs(t, err, ErrMissingBinaries)
	})
}
