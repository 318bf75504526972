package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
)

// ClusterResources says which cluster-scoped resources a backup holds.
//
// +kubebuilder:validation:Enum=auto;include;exclude
type ClusterResources string

const (
	// ClusterResourcesAuto backs up the cluster-scoped objects related to the
	// selected namespaces (the Namespace objects, PersistentVolumes bound to
	// their claims, CRDs of the custom resources backed up). A backup of all
	// namespaces with no label selector takes every cluster-scoped object.
	ClusterResourcesAuto ClusterResources = "auto"
	// ClusterResourcesInclude backs up every selected cluster-scoped resource.
	ClusterResourcesInclude ClusterResources = "include"
	// ClusterResourcesExclude backs up no cluster-scoped resource (Namespace
	// objects of the selected namespaces are still kept so a restore can
	// recreate them).
	ClusterResourcesExclude ClusterResources = "exclude"
)

// DefaultTTL is how long a backup is kept when the spec does not say.
const DefaultTTL = 720 * time.Hour

// BackupSpec is what a user asks for. It is the request body of
// POST /v1/backups and is stored in backup.json.
//
// +kubebuilder:object:generate=true
type BackupSpec struct {
	// Name names the run; a resource's is its metadata.name.
	// +optional
	Name               string           `json:"name"`
	IncludedNamespaces []string         `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string         `json:"excludedNamespaces,omitempty"`
	IncludedResources  []string         `json:"includedResources,omitempty"`
	ExcludedResources  []string         `json:"excludedResources,omitempty"`
	ClusterResources   ClusterResources `json:"clusterResources,omitempty"`
	// RelatedClusterResources, in auto mode, also takes what the
	// namespaces' workloads need to run in another cluster: the
	// ClusterRoleBindings naming their service accounts, the ClusterRoles
	// those and their RoleBindings bind, and the storage, priority,
	// runtime and ingress classes their objects name (nil: true).
	RelatedClusterResources *bool            `json:"relatedClusterResources,omitempty"`
	LabelSelector           string           `json:"labelSelector,omitempty"`
	OrLabelSelectors        []string         `json:"orLabelSelectors,omitempty"`
	TTL                     *metav1.Duration `json:"ttl,omitempty"`
	// StorageLocation is a location's name in an API request (the
	// operator's; empty: default), any URL from the CLI; a run holds the
	// URL it resolved to.
	StorageLocation string `json:"storageLocation,omitempty"`
	// Schedule names the schedule that started this backup; empty for a
	// backup started by hand. Retention of a schedule reads it.
	Schedule string `json:"schedule,omitempty"`
	// SnapshotVolumes takes a CSI snapshot of every bound claim the backup
	// holds whose driver has a VolumeSnapshotClass (nil: true).
	SnapshotVolumes *bool `json:"snapshotVolumes,omitempty"`
	// NativeSnapshots is what becomes of the snapshots (empty: keep).
	NativeSnapshots NativeSnapshots `json:"nativeSnapshots,omitempty"`
	// CSISnapshotTimeout bounds the wait for each snapshot to be ready
	// (nil: DefaultCSISnapshotTimeout); one that is not is canceled and its
	// operation Failed.
	CSISnapshotTimeout *metav1.Duration `json:"csiSnapshotTimeout,omitempty"`
	// SnapshotMoveData moves each snapshot's data into the location's kopia
	// repository, so the backup survives the loss of the cluster's storage.
	SnapshotMoveData bool `json:"snapshotMoveData,omitempty"`
	// DataMoverPrepareTimeout bounds how long a volume's data mover may
	// take to start (nil: DefaultDataMoverPrepareTimeout).
	DataMoverPrepareTimeout *metav1.Duration `json:"dataMoverPrepareTimeout,omitempty"`
	// DataMoverTimeout bounds the move of one volume's data, retries
	// included (nil: DefaultDataMoverTimeout).
	DataMoverTimeout *metav1.Duration `json:"dataMoverTimeout,omitempty"`
	// ItemOperationTimeout bounds each async operation an extension
	// starts, retries included (nil: DefaultItemOperationTimeout); one
	// that has not ended is canceled and fails.
	ItemOperationTimeout *metav1.Duration `json:"itemOperationTimeout,omitempty"`
	// Hooks run commands in the selected pods before and after their
	// volumes are snapshotted (pods' hook annotations take precedence).
	Hooks *BackupHooks `json:"hooks,omitempty"`
	// VolumePolicies decide per volume whether it is skipped, snapshotted
	// or copied from its pod (fs-backup), in Velero's resource-policy
	// format (version v1, volumePolicies).
	VolumePolicies *DocumentRef `json:"volumePolicies,omitempty"`
	// DefaultVolumesToFsBackup copies every volume of the selected
	// running pods from the pod's directory on its node, except those a
	// snapshot covers, those the pod's backup-volumes-excludes
	// annotation names, and projected, Secret, ConfigMap, downward API and
	// hostPath volumes (nil: false; pods still opt in volume by volume
	// with backup.velero.io/backup-volumes).
	DefaultVolumesToFsBackup *bool `json:"defaultVolumesToFsBackup,omitempty"`
}

// TakesWorkloadDependencies reports whether a namespace backup takes the
// cluster-scoped objects its workloads need (RelatedClusterResources).
func (s BackupSpec) TakesWorkloadDependencies() bool {
	return s.RelatedClusterResources == nil || *s.RelatedClusterResources
}

// WholeCluster reports whether the backup takes every cluster-scoped
// type: include, or auto with every namespace and no label selector.
func (s BackupSpec) WholeCluster() bool {
	if s.ClusterResources == ClusterResourcesInclude {
		return true
	}
	namespaces, nsErr := filter.NewGlobs(s.IncludedNamespaces, s.ExcludedNamespaces)
	labels, lErr := filter.NewLabels(s.LabelSelector, s.OrLabelSelectors)
	auto := s.ClusterResources == ClusterResourcesAuto || s.ClusterResources == ""
	return auto && nsErr == nil && lErr == nil && namespaces.IncludesEverything() && labels.Empty()
}

// TakesRelatedByReference reports whether the backup's cluster-scoped
// objects are the ones its namespaced objects need (auto mode, not the
// whole cluster), which a restore creates only where missing.
func (s BackupSpec) TakesRelatedByReference() bool {
	auto := s.ClusterResources == ClusterResourcesAuto || s.ClusterResources == ""
	return auto && !s.WholeCluster()
}

// CopiesAllPodVolumes reports whether every pod volume no snapshot
// covers is copied from its pod (defaultVolumesToFsBackup).
func (s BackupSpec) CopiesAllPodVolumes() bool {
	return s.DefaultVolumesToFsBackup != nil && *s.DefaultVolumesToFsBackup
}

// SnapshotsVolumes reports whether the backup snapshots volumes.
func (s BackupSpec) SnapshotsVolumes() bool { return s.SnapshotVolumes == nil || *s.SnapshotVolumes }

// SnapshotTimeout is CSISnapshotTimeout or its default.
func (s BackupSpec) SnapshotTimeout() time.Duration {
	if s.CSISnapshotTimeout == nil || s.CSISnapshotTimeout.Duration <= 0 {
		return DefaultCSISnapshotTimeout
	}
	return s.CSISnapshotTimeout.Duration
}

// OperationTimeout is ItemOperationTimeout or its default.
func (s BackupSpec) OperationTimeout() time.Duration {
	return durationOr(s.ItemOperationTimeout, DefaultItemOperationTimeout)
}

// PrepareTimeout is DataMoverPrepareTimeout or its default.
func (s BackupSpec) PrepareTimeout() time.Duration {
	return durationOr(s.DataMoverPrepareTimeout, DefaultDataMoverPrepareTimeout)
}

// DataTimeout is DataMoverTimeout or its default.
func (s BackupSpec) DataTimeout() time.Duration {
	return durationOr(s.DataMoverTimeout, DefaultDataMoverTimeout)
}

// nonPositive names the set durations that are zero or negative, in
// field order.
func nonPositive(fields map[string]*metav1.Duration) []string {
	var problems []string
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		if d := fields[field]; d != nil && d.Duration <= 0 {
			problems = append(problems, fmt.Sprintf("%s %s must be positive", field, d.Duration))
		}
	}
	return problems
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// WithDefaults fills the fields a user may leave out.
func (s BackupSpec) WithDefaults(defaultLocation string) BackupSpec {
	if len(s.IncludedNamespaces) == 0 {
		s.IncludedNamespaces = []string{"*"}
	}
	if s.ClusterResources == "" {
		s.ClusterResources = ClusterResourcesAuto
	}
	if s.TTL == nil {
		s.TTL = &metav1.Duration{Duration: DefaultTTL}
	}
	if s.StorageLocation == "" {
		s.StorageLocation = defaultLocation
	}
	return s
}

// Validate checks everything that can be checked without a cluster and
// returns every problem at once, so a user fixes a request in one go.
func (s BackupSpec) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	problems = append(problems, nameProblems("name", s.Name)...)
	if _, err := filter.NewGlobs(s.IncludedNamespaces, s.ExcludedNamespaces); err != nil {
		add("namespaces: %v", err)
	}
	if _, err := filter.NewGlobs(s.IncludedResources, s.ExcludedResources); err != nil {
		add("resources: %v", err)
	}
	switch s.ClusterResources {
	case "", ClusterResourcesAuto, ClusterResourcesInclude, ClusterResourcesExclude:
	default:
		add("clusterResources %q must be one of auto, include, exclude", s.ClusterResources)
	}
	if _, err := filter.NewLabels(s.LabelSelector, s.OrLabelSelectors); err != nil {
		add("%v", err)
	}
	if s.TTL != nil && s.TTL.Duration < 0 {
		add("ttl %s must not be negative", s.TTL.Duration)
	}
	switch s.NativeSnapshots {
	case "", NativeSnapshotsKeep, NativeSnapshotsKeepNewest:
	case NativeSnapshotsDelete:
		if !s.SnapshotMoveData {
			add("nativeSnapshots %q needs snapshotMoveData: without it the snapshot is the backup's only copy of the volume", s.NativeSnapshots)
		}
	default:
		add("nativeSnapshots %q must be one of keep, keep-newest, delete", s.NativeSnapshots)
	}
	if s.SnapshotMoveData && !s.SnapshotsVolumes() {
		add("snapshotMoveData needs snapshotVolumes: the data is moved from the volumes' snapshots")
	}
	problems = append(problems, nonPositive(map[string]*metav1.Duration{"csiSnapshotTimeout": s.CSISnapshotTimeout,
		"dataMoverPrepareTimeout": s.DataMoverPrepareTimeout, "dataMoverTimeout": s.DataMoverTimeout,
		"itemOperationTimeout": s.ItemOperationTimeout})...)
	problems = append(problems, s.Hooks.problems()...)
	problems = append(problems, s.VolumePolicies.problems("volumePolicies", func(data []byte) error {
		_, err := volumepolicy.Parse(data)
		return err
	})...)
	if len(problems) > 0 {
		return &InvalidSpecError{What: "backup", Problems: problems}
	}
	return nil
}

// Hash identifies a spec: the same name with the same hash is the same
// request (idempotent); with another hash it is a conflict.
func (s BackupSpec) Hash() string {
	data, _ := json.Marshal(s) // a struct of plain fields always encodes
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// nameProblems checks a backup or restore name: it becomes a workflow ID,
// a folder in the location and a label value.
func nameProblems(field, name string) []string {
	if name == "" {
		return []string{field + " is required"}
	}
	var problems []string
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		problems = append(problems, fmt.Sprintf("%s %q is not a valid DNS-1123 name: %s", field, name, msg))
	}
	if len(name) > maxRunName {
		problems = append(problems, fmt.Sprintf("%s %q is longer than %d characters", field, name, maxRunName))
	}
	return problems
}

// InvalidSpecError lists what is wrong with a backup or restore spec.
type InvalidSpecError struct {
	What     string
	Problems []string
}

func (e *InvalidSpecError) Error() string {
	what := e.What
	if what == "" {
		what = "backup"
	}
	return "invalid " + what + " spec: " + strings.Join(e.Problems, "; ")
}
