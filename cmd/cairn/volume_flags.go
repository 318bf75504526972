package main

import (
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// volumeFlags are a backup's volume flags and the timeout of extensions'
// operations, the same for backup create and schedule create/update. Plain fields are bound into the spec; the
// optional ones (pointers in the spec) go through apply.
type volumeFlags struct {
	snapshotVolumes bool
	fsBackupAll     bool
	snapshotTimeout time.Duration
	prepareTimeout  time.Duration
	dataTimeout     time.Duration
	itemOpTimeout   time.Duration
	policiesFile    string
	policiesConfig  string
}

func (v *volumeFlags) register(f *pflag.FlagSet, spec *v1alpha1.BackupSpec, opts *v1alpha1.BackupOptions) {
	f.BoolVar(&v.snapshotVolumes, "snapshot-volumes", true, "take a CSI snapshot of every bound claim backed up")
	f.BoolVar(&v.fsBackupAll, "default-volumes-to-fs-backup", false, "copy every volume of the backed-up running pods from the pod's directory "+
		"on its node, except those snapshotted, those the pod's backup.velero.io/backup-volumes-excludes names, and Secret, ConfigMap, "+
		"projected, downward API and hostPath volumes (without it, pods opt in with backup.velero.io/backup-volumes)")
	f.StringVar((*string)(&spec.NativeSnapshots), "native-snapshots", "", "what becomes of the snapshots: keep, keep-newest or delete (default keep)")
	f.BoolVar(&spec.SnapshotMoveData, "snapshot-move-data", false, "copy each snapshot's data into the location's kopia repository")
	f.DurationVar(&v.prepareTimeout, "datamover-prepare-timeout", v1alpha1.DefaultDataMoverPrepareTimeout, "how long a volume's data mover may take to start")
	f.DurationVar(&v.dataTimeout, "datamover-timeout", v1alpha1.DefaultDataMoverTimeout, "how long moving one volume's data may take, retries included")
	f.DurationVar(&v.snapshotTimeout, "csi-snapshot-timeout", v1alpha1.DefaultCSISnapshotTimeout, "how long a snapshot may take to be ready before its operation fails")
	f.DurationVar(&v.itemOpTimeout, "item-operation-timeout", v1alpha1.DefaultItemOperationTimeout,
		"how long an async operation an extension starts may take, retries included, before it is canceled and fails")
	f.IntVar(&opts.VolumeConcurrency, "volume-concurrency", 0, "volumes snapshotted at once (default 4)")
	f.StringVar(&v.policiesFile, "resource-policies", "", "a file of volume policies (Velero's resource-policy format: version v1, volumePolicies) "+
		"that skip, snapshot or copy from their pods (fs-backup) volumes by type, class, driver, size, labels or phase")
	f.StringVar(&v.policiesConfig, "resource-policies-configmap", "", "a ConfigMap in the worker's namespace holding volume policies, as Velero takes them")
}

// apply sets the optional volume fields of spec whose flags were given.
func (v *volumeFlags) apply(changed func(string) bool, spec *v1alpha1.BackupSpec) error {
	if changed("resource-policies") || changed("resource-policies-configmap") {
		ref, err := documentRef("resource-policies", v.policiesFile, v.policiesConfig)
		if err != nil {
			return err
		}
		spec.VolumePolicies = ref
	}
	if changed("snapshot-volumes") {
		on := v.snapshotVolumes
		spec.SnapshotVolumes = &on
	}
	if changed("default-volumes-to-fs-backup") {
		on := v.fsBackupAll
		spec.DefaultVolumesToFsBackup = &on
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
		field **metav1.Duration
	}{
		{"csi-snapshot-timeout", v.snapshotTimeout, &spec.CSISnapshotTimeout},
		{"datamover-prepare-timeout", v.prepareTimeout, &spec.DataMoverPrepareTimeout},
		{"datamover-timeout", v.dataTimeout, &spec.DataMoverTimeout},
		{"item-operation-timeout", v.itemOpTimeout, &spec.ItemOperationTimeout},
	} {
		if changed(d.flag) {
			*d.field = &metav1.Duration{Duration: d.value}
		}
	}
	return nil
}
