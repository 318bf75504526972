package v1alpha1

// OperationKindPodVolumeBackup is the file-system copy of one pod volume
// into the location's kopia repository, read on the pod's node (Velero's
// name for it).
const OperationKindPodVolumeBackup = "PodVolumeBackup"

// ErrTypePodGone: the pod whose volume a file-system backup copies was
// deleted, replaced or stopped since the plan; no retry brings it back.
const ErrTypePodGone = "PodGone"

// PodVolume is one volume of a running pod that a backup copies from the
// pod's directory on its node: a volume no snapshot can take (an
// emptyDir, a local or NFS volume, a CSI volume without snapshots).
type PodVolume struct {
	Pod string `json:"pod"`
	// UID is the pod's: the kubelet keeps its volumes under pods/<uid>.
	UID string `json:"uid"`
	// Volume is the volume's name in the pod's spec.
	Volume string `json:"volume"`
	// Node runs the pod, and so the data mover that reads the volume.
	Node string `json:"node"`
	// Dir is the volume's directory below the pod's on the node, e.g.
	// "volumes/kubernetes.io~empty-dir/cache".
	Dir string `json:"dir"`
	// Source is the volume's kind in the pod's spec: emptyDir,
	// persistentVolumeClaim, nfs, csi, ...
	Source string `json:"source"`
	// SelectedBy says what asked for the copy: an annotation, a volume
	// policy, or defaultVolumesToFsBackup.
	SelectedBy string `json:"selectedBy"`
	// Consistency says how the copy was taken from the live volume:
	// ConsistencyCrash or ConsistencyHooks; set when the copy starts.
	Consistency string `json:"consistency,omitempty"`
}

// How a pod volume's copy was taken.
const (
	// ConsistencyCrash: from the running pod as it was, as after a
	// crash.
	ConsistencyCrash = "crash-consistent"
	// ConsistencyHooks: between the pod's pre and post backup hooks,
	// every pre hook having succeeded.
	ConsistencyHooks = "quiesced by the pod's hooks"
)

// FSBackupAnnotations ask for a file-system backup of a pod's volumes,
// named in a comma-separated list: Velero's opt-in annotation, so that
// workloads annotated for Velero keep their meaning, and cairn's.
var FSBackupAnnotations = []string{"backup.velero.io/backup-volumes", "cairn.io/backup-volumes"}

// FSBackupExcludeAnnotations name the volumes a backup with
// defaultVolumesToFsBackup leaves out of a pod's copy.
var FSBackupExcludeAnnotations = []string{"backup.velero.io/backup-volumes-excludes", "cairn.io/backup-volumes-excludes"}

// DataName names a volume's data in the kopia repository, within its
// namespace: the claim, so that each backup of it is incremental to the
// last whichever pod mounts it, or for a pod's own volume (an emptyDir)
// "<pod>/<volume>".
func (v Volume) DataName() string {
	if v.PodVolume != nil && v.Claim == "" {
		return v.PodVolume.Pod + "/" + v.PodVolume.Volume
	}
	return v.Claim
}
