package csi

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// fsBackupAnnotations ask for a file-system backup of a pod's volumes,
// named in a comma-separated list: Velero's opt-in annotation, so that
// workloads annotated for Velero keep their meaning, and cairn's.
var fsBackupAnnotations = []string{"backup.velero.io/backup-volumes", "cairn.io/backup-volumes"}

// maxPodVolumeWarnings bounds the warnings of pods' file-system backup
// annotations one backup records; one more says how many were left out.
const maxPodVolumeWarnings = 100

// fsBackupWarnings says which volumes a pod's annotations ask a
// file-system backup of that cairn does not back up: it cannot take a
// file-system copy yet, so only a volume whose claim it snapshots has
// its data in the backup. A name the pod has no volume for is a warning
// too.
func fsBackupWarnings(pod *corev1.Pod, snapshotted map[string]bool) []string {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	seen := map[string]bool{}
	var warnings []string
	for _, key := range fsBackupAnnotations {
		for _, name := range strings.Split(pod.Annotations[key], ",") {
			name = strings.TrimSpace(name)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			v, ok := volumes[name]
			switch {
			case !ok:
				warnings = append(warnings, fmt.Sprintf("pod %s/%s: %s names volume %s, which the pod does not have", pod.Namespace, pod.Name, key, name))
			case v.PersistentVolumeClaim != nil && snapshotted[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]:
				// Its claim's snapshot holds its data.
			default:
				warnings = append(warnings, fmt.Sprintf("pod %s/%s: %s asks for a file-system backup of volume %s, which cairn cannot take yet: its data is not backed up",
					pod.Namespace, pod.Name, key, name))
			}
		}
	}
	return warnings
}
