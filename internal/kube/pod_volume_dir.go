package kube

import corev1 "k8s.io/api/core/v1"

// Where the kubelet keeps a pod's volumes, below the pod's own directory
// (<pods dir>/<pod uid>/) on its node: what a file-system backup reads
// and a pod volume restore writes.

// InlineVolumeDir is the directory of a volume the pod's spec defines
// itself (an emptyDir, NFS or inline CSI volume), "" for other kinds.
func InlineVolumeDir(vol corev1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return "volumes/kubernetes.io~empty-dir/" + vol.Name
	case vol.NFS != nil:
		return "volumes/kubernetes.io~nfs/" + vol.Name
	case vol.CSI != nil:
		return "volumes/kubernetes.io~csi/" + vol.Name + "/mount"
	}
	return ""
}

// ClaimVolumeDir is where the kubelet mounts a claim's bound volume, or
// why cairn does not copy it from there.
func ClaimVolumeDir(pv *corev1.PersistentVolume) (dir, why string) {
	switch src := pv.Spec.PersistentVolumeSource; {
	case src.CSI != nil:
		return "volumes/kubernetes.io~csi/" + pv.Name + "/mount", ""
	case src.Local != nil:
		return "volumes/kubernetes.io~local-volume/" + pv.Name, ""
	case src.NFS != nil:
		return "volumes/kubernetes.io~nfs/" + pv.Name, ""
	case src.HostPath != nil:
		return "", "its volume " + pv.Name + " is a hostPath volume, which is never copied"
	default:
		return "", "its volume " + pv.Name + " is of a kind cairn cannot copy from its pod"
	}
}
