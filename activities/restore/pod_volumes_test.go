package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestRestoredPodsWaitForTheirCopies: a restored pod whose volumes the
// backup copied gets, first of its init containers, a restricted
// container that waits for the volumes' markers in an emptyDir of its
// own, and the restore's annotation; the plan lists each volume in the
// target namespace, named for the kopia tags of its source, and warns
// about a copy the pod has no volume for any more.
func TestRestoredPodsWaitForTheirCopies(t *testing.T) {
	copyOf := func(volume, claim, snapshot string) v1alpha1.VolumeRecord {
		return v1alpha1.VolumeRecord{Volume: v1alpha1.Volume{Namespace: "shop", Claim: claim,
			PodVolume: &v1alpha1.PodVolume{Pod: "web", Volume: volume, Source: "emptyDir"}},
			Phase: v1alpha1.OperationCompleted, Upload: &v1alpha1.DataUploadInfo{SnapshotID: snapshot, Bytes: 10, Files: 2}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "migrate", Image: "app"}},
		Containers:     []corev1.Container{{Name: "main", Image: "app"}},
		Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "files", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "files"}}}},
	}}
	pod.Name, pod.Namespace = "web", "shop-copy"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	require.NoError(t, err)
	obj := &unstructured.Unstructured{Object: m}

	spec := v1alpha1.RestoreSpec{Name: "r1"}
	vols, warnings, err := addRestoreWait(obj, spec, "shop",
		[]v1alpha1.VolumeRecord{copyOf("cache", "", "k1"), copyOf("files", "files", "k2"), copyOf("gone", "", "k3")},
		RestoreWait{Image: "cairn:1", PullPolicy: corev1.PullIfNotPresent})
	require.NoError(t, err)
	assert.Equal(t, []string{"pod shop-copy/web has no volume gone any more: its copy (kopia snapshot k3) is not written back"}, warnings)
	require.Len(t, vols, 2)
	assert.Equal(t, "fs-restore/shop-copy/web/cache", vols[0].ID)
	assert.Equal(t, "shop-copy/web/cache", vols[0].Key())
	assert.Equal(t, "shop/web/cache", vols[0].SourceKey(), "the tag the backup's kopia snapshot carries")
	assert.Equal(t, "shop/files", vols[1].SourceKey(), "a claim's copy is named by its claim")
	assert.Equal(t, "k2", vols[1].SnapshotID)

	var got corev1.Pod
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got))
	assert.Equal(t, "r1", got.Annotations[v1alpha1.RestoreWaitAnnotation])
	require.Len(t, got.Spec.InitContainers, 2)
	wait := got.Spec.InitContainers[0]
	assert.Equal(t, v1alpha1.RestoreWaitContainer, wait.Name, "first: the init containers after it see the data")
	assert.Equal(t, "migrate", got.Spec.InitContainers[1].Name)
	assert.Equal(t, []string{"pod-volume-wait", "--restore", "r1", "--dir", v1alpha1.RestoreWaitDir, "--volumes", "cache,files"}, wait.Args)
	assert.Equal(t, "cairn:1", wait.Image)
	sc := wait.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.RunAsNonRoot)
	assert.NotZero(t, *sc.RunAsUser)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Equal(t, []corev1.VolumeMount{{Name: v1alpha1.RestoreWaitVolume, MountPath: v1alpha1.RestoreWaitDir, ReadOnly: true},
		{Name: v1alpha1.RestoreWaitTmpVolume, MountPath: "/tmp"}}, wait.VolumeMounts,
		"it mounts only its markers, read-only, and a /tmp of its own: none of the pod's data")
	require.Len(t, got.Spec.Volumes, 4)
	for _, v := range got.Spec.Volumes[2:] {
		require.NotNil(t, v.EmptyDir, v.Name)
		assert.Equal(t, "1Mi", v.EmptyDir.SizeLimit.String())
	}
	assert.Equal(t, v1alpha1.RestoreWaitVolume, got.Spec.Volumes[2].Name)

	// A pod none of whose copies it can take is left as it is.
	before := obj.DeepCopy()
	vols, warnings, err = addRestoreWait(obj, spec, "shop", []v1alpha1.VolumeRecord{copyOf("gone", "", "k3")}, RestoreWait{Image: "cairn:1"})
	require.NoError(t, err)
	assert.Empty(t, vols)
	assert.Len(t, warnings, 1)
	assert.Equal(t, before, obj)

	// So is one when the worker has no image for the init container.
	vols, warnings, err = addRestoreWait(obj, spec, "shop", []v1alpha1.VolumeRecord{copyOf("cache", "", "k1")}, RestoreWait{})
	require.NoError(t, err)
	assert.Empty(t, vols)
	assert.Equal(t, []string{"pod shop-copy/web: the worker has no data mover image for its restore-wait init container: " +
		"its 1 volume copies are not written back"}, warnings)
	assert.Equal(t, before, obj)
}

// TestVolumeOfACopiedClaimIsNotRestored: a claim whose data is a pod's
// file-system copy gets a new volume (its old one may be another claim's
// or another node's directory): its PersistentVolume is skipped, saying
// why, and the claim is not bound to it.
func TestVolumeOfACopiedClaimIsNotRestored(t *testing.T) {
	idx := &backupIndex{volumeClaims: map[string]string{"pv-files": "shop/files", "pv-db": "shop/db"},
		copiedClaims: map[string]bool{"shop/files": true}, claims: map[string]bool{"shop/files": true, "shop/db": true}}
	p := &restorePlan{types: map[string]v1alpha1.RestoreType{"persistentvolumes": {}}}
	sel := &selection{allCluster: true}
	assert.Contains(t, copiedVolumeReplaces("pv-files", idx), "file-system copy")
	assert.Empty(t, copiedVolumeReplaces("pv-db", idx))
	assert.False(t, pvRestored("pv-files", idx, p, sel), "the claim is unbound, for a new volume")
	assert.True(t, pvRestored("pv-db", idx, p, sel))
}
