package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/csistate"
)

// makeClaims creates a namespace with claims of the sandbox's CSI class
// and waits until each is bound to a provisioned volume.
func makeClaims(t *testing.T, s *stack, namespace string, claims ...string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	class := sandbox.CSIStorageClass
	for _, name := range claims {
		_, err := kc.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "vol"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range claims {
		waitClaimBound(t, s, namespace, name)
	}
}

func waitClaimBound(t *testing.T, s *stack, namespace, name string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := kc.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && c.Status.Phase == corev1.ClaimBound {
			return
		}
		require.True(t, time.Now().Before(deadline), "claim %s/%s not bound: %+v %v", namespace, name, c, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// writeVolume writes files (relative path → content) into a claim's volume.
func writeVolume(t *testing.T, s *stack, namespace, claim string, files map[string]string) {
	t.Helper()
	dir, err := s.cluster.VolumePath(context.Background(), namespace, claim)
	require.NoError(t, err)
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
	}
}

// readVolume reads every regular file of a claim's volume.
func readVolume(t *testing.T, s *stack, namespace, claim string) map[string]string {
	t.Helper()
	dir, err := s.cluster.VolumePath(context.Background(), namespace, claim)
	require.NoError(t, err)
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(data)
		return nil
	}))
	return out
}

func snapshots(t *testing.T, s *stack) snapclient.Interface {
	t.Helper()
	sc, err := snapclient.NewForConfig(s.cluster.Config())
	require.NoError(t, err)
	return sc
}

// backupSnapshots lists the VolumeSnapshots and contents a backup made
// (restored copies, which carry a restore label, are not the backup's).
func backupSnapshots(t *testing.T, s *stack, backup string) ([]snapv1.VolumeSnapshot, []snapv1.VolumeSnapshotContent) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelBackup + "=" + backup + ",!" + v1alpha1.LabelRestore}
	ctx := context.Background()
	vs, err := snapshots(t, s).SnapshotV1().VolumeSnapshots("").List(ctx, sel)
	require.NoError(t, err)
	vsc, err := snapshots(t, s).SnapshotV1().VolumeSnapshotContents().List(ctx, sel)
	require.NoError(t, err)
	return vs.Items, vsc.Items
}

// driverSnapshots are the snapshots the CSI driver holds (by ID).
func driverSnapshots(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	list, err := csistate.Layout{Dir: s.cluster.CSIStateDir()}.Snapshots()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, sn := range list {
		out[sn.ID] = true
	}
	return out
}

// waitNoSnapshots waits until a backup has no VolumeSnapshot or content
// left and the driver holds none of the handles given.
func waitNoSnapshots(t *testing.T, s *stack, backup string, handles ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		vs, vsc := backupSnapshots(t, s, backup)
		held := driverSnapshots(t, s)
		left := len(vs) + len(vsc)
		for _, h := range handles {
			if held[h] {
				left++
			}
		}
		if left == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "backup %s still has snapshots: %d VolumeSnapshots, %d contents, driver %v",
			backup, len(vs), len(vsc), held)
		time.Sleep(300 * time.Millisecond)
	}
}

// operation returns a backup's operation of a claim.
func operation(t *testing.T, status *v1alpha1.BackupStatus, namespace, claim string) v1alpha1.Operation {
	t.Helper()
	require.NotNil(t, status)
	for _, op := range status.Operations {
		if op.Volume.Namespace == namespace && op.Volume.Claim == claim {
			return op
		}
	}
	t.Fatalf("no operation for claim %s/%s in %+v", namespace, claim, status.Operations)
	return v1alpha1.Operation{}
}
