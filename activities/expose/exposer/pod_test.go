package exposer

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
)

// readySnapshot makes a bound claim in namespace app and a ready
// VolumeSnapshot of it, and returns the snapshot's content.
func readySnapshot(t *testing.T, kc kubernetes.Interface, sc snapclient.Interface) *snapv1.VolumeSnapshotContent {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	class, snapClass := sandbox.CSIStorageClass, sandbox.CSISnapshotClass
	_, err = kc.CoreV1().PersistentVolumeClaims("app").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	claim := "data"
	_, err = sc.SnapshotV1().VolumeSnapshots("app").Create(ctx, &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "snap"},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim}, VolumeSnapshotClassName: &snapClass},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var content *snapv1.VolumeSnapshotContent
	require.Eventually(t, func() bool {
		s, err := sc.SnapshotV1().VolumeSnapshots("app").Get(ctx, "snap", metav1.GetOptions{})
		if err != nil || s.Status == nil || s.Status.ReadyToUse == nil || !*s.Status.ReadyToUse {
			return false
		}
		content, err = sc.SnapshotV1().VolumeSnapshotContents().Get(ctx, *s.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
		return err == nil
	}, time.Minute, 200*time.Millisecond)
	return content
}

// TestPodExposerAgainstTheAPIServer checks the objects the pod exposer
// makes against the sandbox's real API server and CSI sidecars (pods never
// run there): a Retain clone of the snapshot, a claim the provisioner
// binds from it, and a pod that mounts it read-only with the password from
// its Secret; then the diagnosis of the pod that never starts, and a
// cleanup that leaves the backup's own snapshot alone.
func TestPodExposerAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandbox cluster")
	}
	binDir, err := sandbox.DefaultBinDir()
	if err != nil || sandbox.CheckCSIBinDir(binDir) != nil {
		t.Skip("sandbox CSI binaries not built (make sandbox-bins)")
	}
	ctx := context.Background()
	cluster, err := sandbox.Start(ctx, sandbox.Options{BinDir: binDir, DataDir: filepath.Join(t.TempDir(), "sandbox"), CSI: true})
	require.NoError(t, err)
	defer cluster.Stop()
	kc, err := kubernetes.NewForConfig(cluster.Config())
	require.NoError(t, err)
	sc, err := snapclient.NewForConfig(cluster.Config())
	require.NoError(t, err)
	original := readySnapshot(t, kc, sc)

	exp := &Pod{Volumes: &Volumes{Kube: kc, Snapshots: sc, Poll: 100 * time.Millisecond}, Config: PodConfig{
		Image: "registry.example/cairn:test", NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		Args: []string{"--temporal-address", "temporal:7233"}, PasswordSecret: "repo-pw", PasswordKey: "repository-password",
	}}
	target := Target{Owner: "b1", Mode: Backup, Namespace: "cairn", SourceNamespace: "app", Snapshot: "snap",
		Size: 16 << 20, StorageClass: sandbox.CSIStorageClass, TaskQueue: "cairn-datamover-0123456789abcdef", Attempt: 1}
	started, err := exp.Expose(ctx, target, func(string) {})
	require.NoError(t, err)
	assert.Equal(t, "cairn/cairn-dm-0123456789abcdef", started.Claim)
	again, err := exp.Expose(ctx, target, func(string) {})
	require.NoError(t, err, "exposing the same attempt again is no error")
	assert.Equal(t, started.DataMover, again.DataMover)

	clone, err := sc.SnapshotV1().VolumeSnapshotContents().Get(ctx, target.Name(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, snapv1.VolumeSnapshotContentRetain, clone.Spec.DeletionPolicy, "deleting the clone must not delete the backup's snapshot")
	assert.Equal(t, *original.Status.SnapshotHandle, *clone.Spec.Source.SnapshotHandle)
	pod, err := kc.CoreV1().Pods("cairn").Get(ctx, "cairn-dm-0123456789abcdef-1", metav1.GetOptions{})
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "registry.example/cairn:test", c.Image)
	assert.Equal(t, []string{"datamover", "--task-queue", target.TaskQueue, "--path", MountPath, "--temporal-address", "temporal:7233"}, c.Args)
	assert.True(t, c.VolumeMounts[0].ReadOnly)
	assert.Equal(t, target.Name(), pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "repo-pw", c.Env[0].ValueFrom.SecretKeyRef.Name, "the password comes from the Secret, never inline")
	assert.Empty(t, c.Env[0].Value)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, pod.Spec.NodeSelector)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	require.Eventually(t, func() bool {
		claim, err := kc.CoreV1().PersistentVolumeClaims("cairn").Get(ctx, target.Name(), metav1.GetOptions{})
		return err == nil && claim.Status.Phase == corev1.ClaimBound
	}, time.Minute, 200*time.Millisecond, "the provisioner binds the claim from the clone")

	assert.Contains(t, exp.Diagnose(ctx, target), "pod cairn/cairn-dm-0123456789abcdef-1 is Pending")

	require.NoError(t, exp.Cleanup(ctx, target, func(string) {}))
	_, err = kc.CoreV1().Pods("cairn").Get(ctx, pod.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "pod: %v", err)
	_, err = sc.SnapshotV1().VolumeSnapshotContents().Get(ctx, target.Name(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "clone content: %v", err)
	s, err := sc.SnapshotV1().VolumeSnapshots("app").Get(ctx, "snap", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, *s.Status.ReadyToUse, "the backup's snapshot is untouched")
	require.NoError(t, exp.Cleanup(ctx, target, func(string) {}), "cleaning up twice is no error")

	handOverRestoredVolume(t, kc, exp)
}

// handOverRestoredVolume exposes a fresh volume for a restore, hands it
// over to a target claim that then binds it, and checks that the
// reclaim policy comes back and that neither a retried hand-over nor the
// cleanup undoes it.
func handOverRestoredVolume(t *testing.T, kc kubernetes.Interface, exp *Pod) {
	ctx := context.Background()
	nop := func(string) {}
	rt := Target{Owner: "r1", Mode: Restore, Namespace: "cairn", Size: 16 << 20, StorageClass: sandbox.CSIStorageClass,
		AccessModes: []string{"ReadWriteOnce"}, TaskQueue: "cairn-datamover-fedcba9876543210", Attempt: 1}
	_, err := exp.Expose(ctx, rt, nop)
	require.NoError(t, err)
	pod, err := kc.CoreV1().Pods("cairn").Get(ctx, rt.moverName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, pod.Spec.Containers[0].VolumeMounts[0].ReadOnly, "a restore writes into its volume")
	var volume string
	require.Eventually(t, func() bool {
		c, err := kc.CoreV1().PersistentVolumeClaims("cairn").Get(ctx, rt.Name(), metav1.GetOptions{})
		volume = c.Spec.VolumeName
		return err == nil && c.Status.Phase == corev1.ClaimBound && c.Spec.DataSource == nil
	}, time.Minute, 200*time.Millisecond, "a fresh, empty volume is provisioned")

	ref := ClaimRef{Namespace: "app", Name: "restored", Labels: map[string]string{"cairn.io/restore-name": "r1"}}
	handed, err := exp.HandOver(ctx, rt, ref, nop)
	require.NoError(t, err)
	assert.Equal(t, volume, handed)
	_, err = kc.CoreV1().Pods("cairn").Get(ctx, pod.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the data mover pod is gone before its claim: %v", err)
	_, err = kc.CoreV1().PersistentVolumeClaims("cairn").Get(ctx, rt.Name(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the temporary claim is gone: %v", err)
	pv, err := kc.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, pv.Spec.PersistentVolumeReclaimPolicy)
	assert.Equal(t, "Delete", pv.Annotations[v1alpha1.AnnotationReclaimPolicy])
	assert.Equal(t, "app", pv.Spec.ClaimRef.Namespace)
	assert.Equal(t, "restored", pv.Spec.ClaimRef.Name)
	assert.Empty(t, pv.Spec.ClaimRef.UID, "pre-bound, for the claim still to come")
	assert.Equal(t, "r1", pv.Labels["cairn.io/restore-name"])

	state, err := exp.FinishHandOver(ctx, "app", "restored", volume)
	require.NoError(t, err)
	assert.True(t, state.ClaimMissing)
	assert.False(t, state.Done)

	class := sandbox.CSIStorageClass
	_, err = kc.CoreV1().PersistentVolumeClaims("app").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "restored"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		state, err = exp.FinishHandOver(ctx, "app", "restored", volume)
		return err == nil && state.Done
	}, time.Minute, 200*time.Millisecond, "the claim binds the handed-over volume")
	assert.Empty(t, state.Why)
	pv, err = kc.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, pv.Spec.PersistentVolumeReclaimPolicy, "the class's policy is given back")
	assert.NotContains(t, pv.Annotations, v1alpha1.AnnotationReclaimPolicy)

	again, err := exp.HandOver(ctx, rt, ref, nop)
	require.NoError(t, err, "a retried hand-over finds the volume it handed over")
	assert.Equal(t, volume, again)
	require.NoError(t, exp.Cleanup(ctx, rt, nop))
	pv, err = kc.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	require.NoError(t, err, "the cleanup leaves the handed-over volume alone")
	assert.NotEmpty(t, pv.Spec.ClaimRef.UID, "and bound")
	c, err := kc.CoreV1().PersistentVolumeClaims("app").Get(ctx, "restored", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClaimBound, c.Status.Phase)
}
