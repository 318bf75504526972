package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/starter"
)

// TestExclusionLabels: a ConfigMap labelled cairn.io/exclude-from-backup
// and a claim labelled velero.io/exclude-from-backup are left out of a
// backup that selects their namespace, the claim with its snapshot, and
// the results name both with the label; their neighbours are backed up.
func TestExclusionLabels(t *testing.T) {
	t.Parallel()
	s := newCSIStack(t)
	s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	makeClaims(t, s, "excl", "data", "scratch")
	_, err := kc.CoreV1().PersistentVolumeClaims("excl").Patch(ctx, "scratch", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"velero.io/exclude-from-backup":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	for name, labels := range map[string]map[string]string{
		"keep":     {"app": "shop"},
		"skip":     {"app": "shop", "cairn.io/exclude-from-backup": "true"},
		"not-true": {"cairn.io/exclude-from-backup": "false"},
	} {
		_, err := kc.CoreV1().ConfigMaps("excl").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	s.backup(v1alpha1.BackupSpec{Name: "excl-1", IncludedNamespaces: []string{"excl"}})
	counts := tarballCounts(t, s, "excl-1")
	assert.Equal(t, 1, counts["configmaps"]["excl/keep"])
	assert.Equal(t, 1, counts["configmaps"]["excl/not-true"], "only the value true excludes")
	assert.NotContains(t, counts["configmaps"], "excl/skip")
	assert.Equal(t, map[string]int{"excl/data": 1}, counts["persistentvolumeclaims"])

	v, err := s.starter.GetBackup(ctx, "excl-1")
	require.NoError(t, err)
	require.Len(t, v.Status.Operations, 1, "only the claim left in is snapshotted: %+v", v.Status.Operations)
	assert.Equal(t, "data", v.Status.Operations[0].Volume.Claim)

	var results v1alpha1.BackupResults
	require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/excl-1/results.json"), &results))
	assert.ElementsMatch(t, []v1alpha1.ResultEntry{
		{Resource: "configmaps", Namespace: "excl", Name: "skip", Message: "labelled cairn.io/exclude-from-backup=true"},
		{Resource: "persistentvolumeclaims", Namespace: "excl", Name: "scratch", Message: "labelled velero.io/exclude-from-backup=true"},
	}, results.Excluded)
}

// TestVolumePolicies: Velero-format volume policies, from a ConfigMap in
// the worker's namespace, skip a volume by its claim's label and one by
// its storage class, give one to fs-backup (a warning, as no running pod
// mounts it), and snapshot only the test CSI driver's volumes, every
// other left out by a catch-all policy. Each left-out volume's warning
// names its policy; the backup completes. A pod annotated for Velero's
// file-system backup is a warning for a volume a policy skips, and for a
// name it lacks.
func TestVolumePolicies(t *testing.T) {
	t.Parallel()
	s := newCSIStack(t)
	s.startWorker("--config-namespace", "backup-config")
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	makeClaims(t, s, "pol", "db", "tmp", "files")
	for claim, value := range map[string]string{"tmp": "skip", "files": "fs"} {
		_, err := kc.CoreV1().PersistentVolumeClaims("pol").Patch(ctx, claim, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"backup":"`+value+`"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	class, err := kc.StorageV1().StorageClasses().Get(ctx, sandbox.CSIStorageClass, metav1.GetOptions{})
	require.NoError(t, err)
	other := class.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Name: "other-sc"}
	_, err = kc.StorageV1().StorageClasses().Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().PersistentVolumeClaims("pol").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "cache"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("other-sc"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitClaimBound(t, s, "pol", "cache")
	foreignClaim(t, s, "pol", "foreign")
	// A pod annotated for Velero's file-system backup; a node selector no
	// node matches keeps it unscheduled.
	_, err = kc.CoreV1().Pods("pol").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"backup.velero.io/backup-volumes": "scratch,db-data,absent"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"e2e.cairn.io/no-such-node": "true"},
			Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web:1"}},
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "db-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db"}}},
			}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	policies := `version: v1
volumePolicies:
- conditions: {pvcLabels: {backup: skip}}
  action: {type: skip}
- conditions: {storageClass: [other-sc]}
  action: {type: skip}
- conditions: {pvcLabels: {backup: fs}}
  action: {type: fs-backup}
- conditions: {csi: {driver: ` + csistate.DriverName + `}}
  action: {type: snapshot}
- conditions: {capacity: "0,"}
  action: {type: skip}
`
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "backup-config"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().ConfigMaps("backup-config").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "volume-policies"},
		Data: map[string]string{"policies.yaml": policies}}, metav1.CreateOptions{})
	require.NoError(t, err)

	s.backup(v1alpha1.BackupSpec{Name: "pol-1", IncludedNamespaces: []string{"pol"},
		VolumePolicies: &v1alpha1.DocumentRef{ConfigMap: "volume-policies"}})
	v, err := s.starter.GetBackup(ctx, "pol-1")
	require.NoError(t, err)
	require.Len(t, v.Status.Operations, 1, "only db is snapshotted: %+v", v.Status.Operations)
	assert.Equal(t, "db", v.Status.Operations[0].Volume.Claim)

	assert.ElementsMatch(t, []string{
		"claim pol/tmp: skipped by volumePolicies[0]: its volume is not backed up",
		"claim pol/cache: skipped by volumePolicies[1]: its volume is not backed up",
		"claim pol/files: volumePolicies[2] asks for fs-backup, but no running pod of the backup mounts it: its volume is not backed up",
		"claim pol/foreign: skipped by volumePolicies[4]: its volume is not backed up",
		"pod pol/web: backup.velero.io/backup-volumes asks to copy volume scratch, but volumePolicies[4] skips it",
		"pod pol/web: backup.velero.io/backup-volumes names volume absent, which the pod does not have",
	}, backupWarnings(t, s, "pol-1"), "the pod's snapshotted claim db is not a warning")
	assert.Len(t, tarballCounts(t, s, "pol-1")["persistentvolumeclaims"], 5, "every claim object is still backed up")

	t.Run("from a file through the CLI; bad documents refused before anything starts", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "policies.yaml")
		for doc, want := range map[string]string{
			"version: v1\nvolumePolicies: [":                                              "volumePolicies",
			"version: v2\nvolumePolicies:\n- action: {type: skip}\n":                      `version "v2" is not supported`,
			"version: v1\nvolumePolicies:\n- action: {type: skip}\n- action: {type: x}\n": "volumePolicies[1]: action: unknown type",
		} {
			require.NoError(t, os.WriteFile(file, []byte(doc), 0o600))
			_, stderr, code := s.cli("backup", "create", "pol-bad", "--include-namespaces", "pol", "--resource-policies", file)
			assert.Equal(t, 2, code, "%s: %s", doc, stderr)
			assert.Contains(t, stderr, want, doc)
		}
		_, err := s.starter.GetBackup(ctx, "pol-bad")
		assert.ErrorIs(t, err, starter.ErrNotFound, "nothing started")

		require.NoError(t, os.WriteFile(file, []byte("version: v1\nvolumePolicies:\n- conditions: {pvcLabels: {backup: skip}}\n  action: {type: snapshot}\n"+
			"- action: {type: skip}\n"), 0o600))
		_, stderr, code := s.cli("backup", "create", "pol-2", "--include-namespaces", "pol", "--resource-policies", file, "--wait")
		require.Equal(t, 0, code, stderr)
		v, err := s.starter.GetBackup(ctx, "pol-2")
		require.NoError(t, err)
		require.Len(t, v.Status.Operations, 1, "only tmp is snapshotted: %+v", v.Status.Operations)
		assert.Equal(t, "tmp", v.Status.Operations[0].Volume.Claim)
	})

	t.Run("a ConfigMap that does not exist fails the backup before any snapshot", func(t *testing.T) {
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "pol-3",
			IncludedNamespaces: []string{"pol"}, VolumePolicies: &v1alpha1.DocumentRef{ConfigMap: "no-such-map"}}})
		require.NoError(t, err)
		v := s.waitDone("pol-3", 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseFailed, v.Phase, "%+v", v.Status)
		assert.Contains(t, v.Status.FailureReason, "configmap backup-config/no-such-map")
		assert.Empty(t, v.Status.Operations)
	})
}
