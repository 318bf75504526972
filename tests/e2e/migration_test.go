package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
)

// TestMigrationToAClusterWithOtherStorageClasses: a backup whose volume
// data moved is restored into a second sandbox cluster, sharing only the
// location, whose storage class of the same driver is called "fast"
// (it has no "cairn-csi"). A mapping to a class the cluster lacks fails
// before anything is created; the spec's mapping, and then Velero's
// change-storage-class ConfigMap, each give a bound claim of class fast
// with byte-identical data.
func TestMigrationToAClusterWithOtherStorageClasses(t *testing.T) {
	t.Parallel()
	src := newMoverStack(t)
	src.startMoverWorker()
	ctx := context.Background()
	makeClaims(t, src.stack, "mig", "data")
	want := fillVolume(t, src.stack, "mig", "data", datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 30, SmallSize: 4096, Seed: 41})
	_, err := src.starter.CreateBackup(ctx, moveRequest("mig-1", "mig"))
	require.NoError(t, err)
	v := src.waitDone("mig-1", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)

	dst := newMoverStackAt(t, src.location)
	kc := fastClient(t, dst.cluster.Config())
	class, err := kc.StorageV1().StorageClasses().Get(ctx, sandbox.CSIStorageClass, metav1.GetOptions{})
	require.NoError(t, err)
	fast := class.DeepCopy()
	fast.ObjectMeta = metav1.ObjectMeta{Name: "fast"}
	_, err = kc.StorageV1().StorageClasses().Create(ctx, fast, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, kc.StorageV1().StorageClasses().Delete(ctx, sandbox.CSIStorageClass, metav1.DeleteOptions{}))
	dst.startMoverWorker()

	t.Run("a mapping to a class the cluster lacks fails before anything is created", func(t *testing.T) {
		r := dst.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "mig-missing", BackupName: "mig-1",
			StorageClassMappings: map[string]string{sandbox.CSIStorageClass: "missing"}}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseFailed, r.Phase)
		assert.Contains(t, r.Status.FailureReason, "the cluster has no StorageClass missing")
		_, err := kc.CoreV1().Namespaces().Get(ctx, "mig", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing was created: %v", err)
	})

	t.Run("the spec's mapping", func(t *testing.T) {
		r := dst.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "mig-r1", BackupName: "mig-1",
			StorageClassMappings: map[string]string{sandbox.CSIStorageClass: "fast"}}}, 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assertBoundTo(t, dst.stack, "mig", "data", "fast")
		assert.Empty(t, datatree.Diff(want, digestVolume(t, dst.stack, "mig", "data"), 10))
	})

	t.Run("Velero's change-storage-class ConfigMap", func(t *testing.T) {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cairn"}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		_, err = kc.CoreV1().ConfigMaps("cairn").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "change-storage-class", Labels: map[string]string{"velero.io/change-storage-class": "RestoreItemAction"}},
			Data:       map[string]string{sandbox.CSIStorageClass: "fast"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		r := dst.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "mig-r2", BackupName: "mig-1",
			NamespaceMapping: map[string]string{"mig": "mig-2"}}}, 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assertBoundTo(t, dst.stack, "mig-2", "data", "fast")
		assert.Empty(t, datatree.Diff(want, digestVolume(t, dst.stack, "mig-2", "data"), 10))
	})
}

// assertBoundTo checks that a claim is bound, of the storage class.
func assertBoundTo(t *testing.T, s *stack, namespace, claim, class string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	var c *corev1.PersistentVolumeClaim
	until(t, func() bool {
		var err error
		c, err = kc.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), claim, metav1.GetOptions{})
		require.NoError(t, err)
		return c.Status.Phase == corev1.ClaimBound
	}, 2*time.Minute, 200*time.Millisecond, "claim %s/%s bound", namespace, claim)
	require.NotNil(t, c.Spec.StorageClassName)
	assert.Equal(t, class, *c.Spec.StorageClassName)
}
