package csi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFSBackupAnnotationsAreWarnings: each volume a pod's annotations
// name for a file-system backup is a warning that its data is not backed
// up, once, whichever annotation names it; a volume whose claim is
// snapshotted is not; a name the pod lacks is a warning of its own.
func TestFSBackupAnnotationsAreWarnings(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			"backup.velero.io/backup-volumes": "cache, data,missing",
			"cairn.io/backup-volumes":         "cache,files",
		}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db"}}},
			{Name: "files", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "nfs"}}},
		}},
	}
	assert.Equal(t, []string{
		"pod shop/web: backup.velero.io/backup-volumes asks for a file-system backup of volume cache, which cairn cannot take yet: its data is not backed up",
		"pod shop/web: backup.velero.io/backup-volumes names volume missing, which the pod does not have",
		"pod shop/web: cairn.io/backup-volumes asks for a file-system backup of volume files, which cairn cannot take yet: its data is not backed up",
	}, fsBackupWarnings(pod, map[string]bool{"shop/db": true}))
	assert.Empty(t, fsBackupWarnings(&corev1.Pod{}, nil))
}
