package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// testCSIBinDir returns the bin dir, or skips the test if the binaries of a
// sandbox with CSI are not built.
func testCSIBinDir(t *testing.T) string { return binDirFor(t, true) }

func startCSICluster(t *testing.T, binDir, dataDir string) *Cluster {
	t.Helper()
	return startClusterWith(t, Options{BinDir: binDir, DataDir: dataDir, CSI: true})
}

func TestCSI(t *testing.T) {
	binDir := testCSIBinDir(t)
	dataDir := t.TempDir()
	c := startCSICluster(t, binDir, dataDir)
	cs := clientset(t, c)
	dyn, err := dynamic.NewForConfig(c.Config())
	require.NoError(t, err)
	ctx := context.Background()
	const ns = "default"
	const poll = 100 * time.Millisecond

	require.Equal(t, filepath.Join(dataDir, "csi"), c.CSIStateDir())

	t.Run("classes", func(t *testing.T) {
		sc, err := cs.StorageV1().StorageClasses().Get(ctx, CSIStorageClass, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, csistate.DriverName, sc.Provisioner)
		require.Equal(t, storagev1.VolumeBindingImmediate, *sc.VolumeBindingMode)
		require.Equal(t, corev1.PersistentVolumeReclaimDelete, *sc.ReclaimPolicy)
		require.False(t, *sc.AllowVolumeExpansion)
		require.NotEqual(t, "true", sc.Annotations["storageclass.kubernetes.io/is-default-class"])

		vsc, err := dyn.Resource(volumeSnapshotClasses).Get(ctx, CSISnapshotClass, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, csistate.DriverName, vsc.Object["driver"])
		require.Equal(t, "Delete", vsc.Object["deletionPolicy"])
		require.Equal(t, "true", vsc.GetAnnotations()["snapshot.storage.kubernetes.io/is-default-class"])
	})

	// The whole path a backup and a restore of a volume take.
	start := time.Now()
	createClaim(t, cs, ns, "data", nil)
	waitBound(t, cs, ns, "data")
	t.Logf("claim provisioned and bound in %s", time.Since(start).Round(time.Millisecond))
	dir, err := c.VolumePath(ctx, ns, "data")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(dir, c.CSIStateDir()+string(filepath.Separator)), dir)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "hello.txt"), []byte("hello, volume\n"), 0o644))

	start = time.Now()
	snapshot := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshot",
		"metadata":   map[string]any{"name": "data-snap", "namespace": ns},
		"spec": map[string]any{
			// No class: CSISnapshotClass is the default.
			"source": map[string]any{"persistentVolumeClaimName": "data"},
		},
	}}
	// The first create of a VolumeSnapshot within 2 s of its CRD being
	// established waits 2 s in the API server (see the "create" case of
	// apiextensions-apiserver's crdHandler.serveResource); so does the
	// snapshot-controller's first VolumeSnapshotContent.
	_, err = dyn.Resource(volumeSnapshots).Namespace(ns).Create(ctx, snapshot, metav1.CreateOptions{})
	require.NoError(t, err)
	var contentName string
	require.Eventually(t, func() bool {
		vs, err := dyn.Resource(volumeSnapshots).Namespace(ns).Get(ctx, "data-snap", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
		size, _, _ := unstructured.NestedString(vs.Object, "status", "restoreSize")
		contentName, _, _ = unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
		return ready && size != "" && contentName != ""
	}, 60*time.Second, poll, "VolumeSnapshot data-snap not ready to use")
	t.Logf("snapshot ready in %s", time.Since(start).Round(time.Millisecond))
	content, err := dyn.Resource(volumeSnapshotContents).Get(ctx, contentName, metav1.GetOptions{})
	require.NoError(t, err)
	handle, _, _ := unstructured.NestedString(content.Object, "status", "snapshotHandle")
	require.True(t, csistate.IsSnapshotID(handle), "snapshot handle %q", handle)
	snapDir := csistate.SnapshotDirForHandle(c.CSIStateDir(), handle)
	got, err := os.ReadFile(filepath.Join(snapDir, "sub", "hello.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello, volume\n", string(got))

	start = time.Now()
	apiGroup := "snapshot.storage.k8s.io"
	createClaim(t, cs, ns, "restored", &corev1.TypedLocalObjectReference{
		APIGroup: &apiGroup, Kind: "VolumeSnapshot", Name: "data-snap",
	})
	waitBound(t, cs, ns, "restored")
	t.Logf("claim restored from the snapshot and bound in %s", time.Since(start).Round(time.Millisecond))
	restoredDir, err := c.VolumePath(ctx, ns, "restored")
	require.NoError(t, err)
	require.NotEqual(t, dir, restoredDir)
	got, err = os.ReadFile(filepath.Join(restoredDir, "sub", "hello.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello, volume\n", string(got))

	start = time.Now()
	require.NoError(t, dyn.Resource(volumeSnapshots).Namespace(ns).Delete(ctx, "data-snap", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := os.Stat(snapDir)
		return errors.Is(err, os.ErrNotExist)
	}, 60*time.Second, poll, "snapshot directory %s not deleted", snapDir)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(volumeSnapshotContents).Get(ctx, contentName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, poll, "VolumeSnapshotContent %s not deleted", contentName)
	t.Logf("snapshot deleted in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	require.NoError(t, cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "restored", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := os.Stat(restoredDir)
		return errors.Is(err, os.ErrNotExist)
	}, 60*time.Second, poll, "volume directory %s not deleted with its claim", restoredDir)
	t.Logf("claim's volume deleted in %s", time.Since(start).Round(time.Millisecond))

	t.Run("control", func(t *testing.T) {
		require.NoError(t, c.SetCSIControl(csistate.Control{SnapshotError: "disk on fire"}))
		ctl, err := csistate.ReadControl(c.CSIStateDir())
		require.NoError(t, err)
		require.Equal(t, "disk on fire", ctl.SnapshotError)
		require.NoError(t, c.SetCSIControl(csistate.Control{}))
	})

	t.Run("volume path errors", func(t *testing.T) {
		_, err := c.VolumePath(ctx, ns, "missing")
		require.True(t, apierrors.IsNotFound(err), err)
		class := "nothing-provisions-this"
		createClaimOfClass(t, cs, ns, "pending", class, nil)
		_, err = c.VolumePath(ctx, ns, "pending")
		require.ErrorContains(t, err, "not bound")
	})

	t.Run("stop", func(t *testing.T) {
		pids := csiPIDs(c)
		require.Len(t, pids, 4, "driver and three sidecars")
		require.NoError(t, c.Stop())
		for _, pid := range pids {
			err := syscall.Kill(pid, 0)
			require.ErrorIs(t, err, syscall.ESRCH, "process %d still there after Stop", pid)
		}
		if runtime.GOOS == "linux" {
			require.Empty(t, processesUsing(t, dataDir), "processes left after Stop")
		}
		// The volume outlives the cluster.
		got, err := os.ReadFile(filepath.Join(dir, "sub", "hello.txt"))
		require.NoError(t, err)
		require.Equal(t, "hello, volume\n", string(got))
	})
}

func TestCSIRestart(t *testing.T) {
	binDir := testCSIBinDir(t)
	dataDir := t.TempDir()
	ctx := context.Background()

	first := startCSICluster(t, binDir, dataDir)
	createClaim(t, clientset(t, first), "default", "keep", nil)
	waitBound(t, clientset(t, first), "default", "keep")
	dir, err := first.VolumePath(ctx, "default", "keep")
	require.NoError(t, err)
	require.NoError(t, first.Stop())

	second := startCSICluster(t, binDir, dataDir)
	got, err := second.VolumePath(ctx, "default", "keep")
	require.NoError(t, err)
	require.Equal(t, dir, got)
	sc, err := clientset(t, second).StorageV1().StorageClasses().Get(ctx, CSIStorageClass, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, csistate.DriverName, sc.Provisioner)
}

func TestCSIOptIn(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{etcdBin, apiserverBin, controllerManagerBin} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
	}
	require.NoError(t, CheckBinDir(dir), "CSI binaries are not needed without Options.CSI")
	err := CheckCSIBinDir(dir)
	require.ErrorIs(t, err, ErrMissingBinaries)
	for _, name := range []string{csiDriverBin, provisionerBin, snapshotterBin, snapshotControllerBin, "crds/" + snapshotCRDs[0]} {
		require.ErrorContains(t, err, name)
	}
	_, err = Start(context.Background(), Options{BinDir: dir, DataDir: t.TempDir(), CSI: true})
	require.ErrorIs(t, err, ErrMissingBinaries)

	var c Cluster
	require.Empty(t, c.CSIStateDir())
	require.ErrorIs(t, c.SetCSIControl(csistate.Control{}), errNoCSI)
	_, err = c.VolumePath(context.Background(), "default", "x")
	require.ErrorIs(t, err, errNoCSI)
}

func TestCSISocketPath(t *testing.T) {
	short := t.TempDir()
	sock, tmp, err := csiSocketPath(short)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(short, "csi.sock"), sock)
	require.Empty(t, tmp)

	long := filepath.Join(short, strings.Repeat("d", 100))
	sock, tmp, err = csiSocketPath(long)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	require.NotEmpty(t, tmp)
	require.Equal(t, filepath.Join(tmp, "csi.sock"), sock)
	require.LessOrEqual(t, len(sock), csistate.MaxSocketPathLen)
}

func createClaim(t *testing.T, cs kubernetes.Interface, ns, name string, dataSource *corev1.TypedLocalObjectReference) {
	t.Helper()
	createClaimOfClass(t, cs, ns, name, CSIStorageClass, dataSource)
}

func createClaimOfClass(t *testing.T, cs kubernetes.Interface, ns, name, class string, dataSource *corev1.TypedLocalObjectReference) {
	t.Helper()
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
			DataSource: dataSource,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func waitBound(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName != "" {
			return
		}
		if time.Now().After(deadline) {
			if err == nil {
				t.Fatalf("claim %s/%s not bound: phase %s, annotations %v", ns, name, pvc.Status.Phase, pvc.Annotations)
			}
			t.Fatalf("claim %s/%s not bound: %v", ns, name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// csiPIDs returns the process IDs of the CSI driver and its sidecars.
func csiPIDs(c *Cluster) []int {
	var pids []int
	for _, p := range c.csi.processes() {
		pids = append(pids, p.pid())
	}
	return pids
}
