package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/resourcemodifiers"
)

// ExistingResourcePolicy says what a restore does with an object that
// already exists in the cluster and differs from the backed-up one.
//
// +kubebuilder:validation:Enum=none;update
type ExistingResourcePolicy string

const (
	// ExistingResourceNone leaves the existing object alone and records the
	// item as skipped with a warning.
	ExistingResourceNone ExistingResourcePolicy = "none"
	// ExistingResourceUpdate patches the existing object to the backed-up
	// state.
	ExistingResourceUpdate ExistingResourcePolicy = "update"
)

// RestoreSpec is what a user asks a restore for. It is the request body of
// POST /v1/restores and is stored in restore.json.
//
// +kubebuilder:object:generate=true
type RestoreSpec struct {
	// Name names the run; a resource's is its metadata.name.
	// +optional
	Name string `json:"name"`
	// BackupName is the backup to restore from: a cairn backup or one
	// written by Velero into the same location.
	BackupName string `json:"backupName"`
	// ScheduleName restores the newest Completed backup of that schedule
	// instead; the starter sets BackupName to it.
	ScheduleName string `json:"scheduleName,omitempty"`
	// StorageLocation holds the backup: a location's name in an API
	// request, any URL from the CLI (default: the default location).
	StorageLocation string `json:"storageLocation,omitempty"`
	// Namespace and resource filters select items of the backup; the
	// namespaces named are those of the backup, before any mapping.
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	IncludedResources  []string `json:"includedResources,omitempty"`
	ExcludedResources  []string `json:"excludedResources,omitempty"`
	LabelSelector      string   `json:"labelSelector,omitempty"`
	OrLabelSelectors   []string `json:"orLabelSelectors,omitempty"`
	// NamespaceMapping restores the objects of a backed-up namespace into
	// another one: {"shop": "shop-copy"}.
	NamespaceMapping map[string]string `json:"namespaceMapping,omitempty"`
	// StorageClassMappings restores claims, volumes and StatefulSets'
	// claim templates of a storage class into another: {"gp2": "fast"},
	// for a cluster whose classes are named differently. It takes
	// precedence over Velero's change-storage-class ConfigMap in the
	// worker's namespace.
	StorageClassMappings map[string]string `json:"storageClassMappings,omitempty"`
	// ResourceModifiers change objects on their way in, in Velero's
	// resource-modifier format (version v1, resourceModifierRules).
	ResourceModifiers      *DocumentRef           `json:"resourceModifiers,omitempty"`
	ExistingResourcePolicy ExistingResourcePolicy `json:"existingResourcePolicy,omitempty"`
	// RestoreStatus lists the resource types (globs) whose status is
	// restored too; every other object's status is left to its controller.
	RestoreStatus *ResourceSelector `json:"restoreStatus,omitempty"`
	// ClusterResources says which cluster-scoped objects are restored:
	// auto (those related to the restored namespaces; all of them when
	// every namespace is restored), include (all selected), exclude (none
	// but the Namespace objects the restore needs).
	ClusterResources ClusterResources `json:"clusterResources,omitempty"`
	// ClusterScopedDenied, set by the starter API, says why the requester
	// may not restore cluster-scoped objects: the restore then skips every
	// cluster-scoped type with this reason (the Namespaces it restores
	// into excepted).
	ClusterScopedDenied string `json:"clusterScopedDenied,omitempty"`
	// AllowPlaintext restores a backup written without the location's
	// encryption key (Velero's, or cairn's from before the key). Without
	// it, where a key is configured, a backup with no manifest or an
	// object stored in plain is CorruptBackup: whoever can write the bucket
	// cannot slip plain objects into an encrypted backup.
	AllowPlaintext bool `json:"allowPlaintext,omitempty"`
	// PreserveNodePorts keeps the nodePorts of Services instead of letting
	// the cluster assign new ones.
	PreserveNodePorts bool `json:"preserveNodePorts,omitempty"`
	// ResourcePriorities replaces the default restore order; types not
	// listed follow in alphabetical order.
	ResourcePriorities []string `json:"resourcePriorities,omitempty"`
	// DataMoverPrepareTimeout bounds how long a volume's data mover may
	// take to start, when the backup moved the volume's data into the
	// repository (nil: DefaultDataMoverPrepareTimeout).
	DataMoverPrepareTimeout *metav1.Duration `json:"dataMoverPrepareTimeout,omitempty"`
	// DataMoverTimeout bounds the restore of one volume's data, retries
	// included (nil: DefaultDataMoverTimeout).
	DataMoverTimeout *metav1.Duration `json:"dataMoverTimeout,omitempty"`
	// Hooks add init containers to restored pods and run commands in them
	// once they run (pods' restore hook annotations take precedence).
	Hooks *RestoreHooks `json:"hooks,omitempty"`
	// ItemOperationTimeout bounds each async operation an extension
	// starts for a restored item, retries included (nil:
	// DefaultItemOperationTimeout); one that runs longer fails.
	ItemOperationTimeout *metav1.Duration `json:"itemOperationTimeout,omitempty"`
}

// OperationTimeout is ItemOperationTimeout or its default.
func (s RestoreSpec) OperationTimeout() time.Duration {
	return durationOr(s.ItemOperationTimeout, DefaultItemOperationTimeout)
}

// PrepareTimeout is DataMoverPrepareTimeout or its default.
func (s RestoreSpec) PrepareTimeout() time.Duration {
	return durationOr(s.DataMoverPrepareTimeout, DefaultDataMoverPrepareTimeout)
}

// DataTimeout is DataMoverTimeout or its default.
func (s RestoreSpec) DataTimeout() time.Duration {
	return durationOr(s.DataMoverTimeout, DefaultDataMoverTimeout)
}

// ResourceSelector selects resource types by include/exclude globs.
//
// +kubebuilder:object:generate=true
type ResourceSelector struct {
	IncludedResources []string `json:"includedResources,omitempty"`
	ExcludedResources []string `json:"excludedResources,omitempty"`
}

// DefaultResourcePriorities is the order a restore applies resource types
// in: definitions and containers first, then what workloads reference,
// then workloads. Types not listed follow, alphabetically.
var DefaultResourcePriorities = []string{
	"customresourcedefinitions.apiextensions.k8s.io",
	"namespaces",
	"storageclasses.storage.k8s.io",
	"priorityclasses.scheduling.k8s.io",
	"runtimeclasses.node.k8s.io",
	"ingressclasses.networking.k8s.io",
	"volumesnapshotclasses.snapshot.storage.k8s.io",
	"volumesnapshotcontents.snapshot.storage.k8s.io",
	"volumesnapshots.snapshot.storage.k8s.io",
	"persistentvolumes",
	"persistentvolumeclaims",
	"serviceaccounts",
	"clusterroles.rbac.authorization.k8s.io",
	"clusterrolebindings.rbac.authorization.k8s.io",
	"roles.rbac.authorization.k8s.io",
	"rolebindings.rbac.authorization.k8s.io",
	"configmaps",
	"secrets",
	"limitranges",
	"resourcequotas",
	"services",
	// Before their controllers: a pod restored with its volumes' copies
	// waits for them, and the controller made next adopts it instead of
	// starting a pod without them.
	"pods",
	"deployments.apps",
	"statefulsets.apps",
	"daemonsets.apps",
	"replicasets.apps",
	"cronjobs.batch",
	"jobs.batch",
}

// WithDefaults fills the fields a user may leave out.
func (s RestoreSpec) WithDefaults(defaultLocation string) RestoreSpec {
	if len(s.IncludedNamespaces) == 0 {
		s.IncludedNamespaces = []string{"*"}
	}
	if s.ClusterResources == "" {
		s.ClusterResources = ClusterResourcesAuto
	}
	if s.ExistingResourcePolicy == "" {
		s.ExistingResourcePolicy = ExistingResourceNone
	}
	if s.StorageLocation == "" {
		s.StorageLocation = defaultLocation
	}
	return s
}

// Validate checks everything that can be checked without a cluster and
// returns every problem at once.
func (s RestoreSpec) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	problems = append(problems, nameProblems("name", s.Name)...)
	if s.BackupName == "" {
		add("backupName is required (or scheduleName)")
	}
	if _, err := filter.NewGlobs(s.IncludedNamespaces, s.ExcludedNamespaces); err != nil {
		add("namespaces: %v", err)
	}
	if _, err := filter.NewGlobs(s.IncludedResources, s.ExcludedResources); err != nil {
		add("resources: %v", err)
	}
	if s.RestoreStatus != nil {
		if _, err := filter.NewGlobs(s.RestoreStatus.IncludedResources, s.RestoreStatus.ExcludedResources); err != nil {
			add("restoreStatus: %v", err)
		}
	}
	if _, err := filter.NewLabels(s.LabelSelector, s.OrLabelSelectors); err != nil {
		add("%v", err)
	}
	switch s.ClusterResources {
	case "", ClusterResourcesAuto, ClusterResourcesInclude, ClusterResourcesExclude:
	default:
		add("clusterResources %q must be one of auto, include, exclude", s.ClusterResources)
	}
	switch s.ExistingResourcePolicy {
	case "", ExistingResourceNone, ExistingResourceUpdate:
	default:
		add("existingResourcePolicy %q must be none or update", s.ExistingResourcePolicy)
	}
	problems = append(problems, mappingProblems(s.NamespaceMapping)...)
	problems = append(problems, classMappingProblems(s.StorageClassMappings)...)
	problems = append(problems, s.ResourceModifiers.problems("resourceModifiers", func(data []byte) error {
		_, err := resourcemodifiers.Parse(data)
		return err
	})...)
	for _, p := range s.ResourcePriorities {
		if p == "" || filter.IsGlob(p) {
			add("resourcePriorities entry %q must be a resource name such as configmaps or deployments.apps", p)
		}
	}
	problems = append(problems, nonPositive(map[string]*metav1.Duration{
		"dataMoverPrepareTimeout": s.DataMoverPrepareTimeout, "dataMoverTimeout": s.DataMoverTimeout,
		"itemOperationTimeout": s.ItemOperationTimeout})...)
	problems = append(problems, s.Hooks.problems()...)
	if len(problems) > 0 {
		return &InvalidSpecError{What: "restore", Problems: problems}
	}
	return nil
}

// mappingProblems checks that every namespace mapping names valid
// namespaces and that no two sources land in the same target.
func mappingProblems(m map[string]string) []string {
	var problems []string
	targets := map[string]string{}
	sources := make([]string, 0, len(m))
	for from := range m {
		sources = append(sources, from)
	}
	sort.Strings(sources)
	for _, from := range sources {
		to := m[from]
		for _, msg := range validation.IsDNS1123Label(from) {
			problems = append(problems, fmt.Sprintf("namespaceMapping source %q: %s", from, msg))
		}
		for _, msg := range validation.IsDNS1123Label(to) {
			problems = append(problems, fmt.Sprintf("namespaceMapping target %q (for %q): %s", to, from, msg))
		}
		if other, ok := targets[to]; ok {
			problems = append(problems, fmt.Sprintf("namespaceMapping maps both %q and %q to %q", other, from, to))
		}
		targets[to] = from
	}
	return problems
}

// ParseNamespaceMapping reads "old:new" pairs, as the CLI takes them.
func ParseNamespaceMapping(pairs []string) (map[string]string, error) {
	return parseMapping("namespace", pairs)
}

// ParseStorageClassMapping reads "old:new" storage class pairs.
func ParseStorageClassMapping(pairs []string) (map[string]string, error) {
	return parseMapping("storage class", pairs)
}

func parseMapping(what string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, p := range pairs {
		from, to, ok := strings.Cut(p, ":")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("%s mapping %q must look like old:new", what, p)
		}
		if prev, dup := m[from]; dup && prev != to {
			return nil, fmt.Errorf("%s %q is mapped twice (to %q and %q)", what, from, prev, to)
		}
		m[from] = to
	}
	return m, nil
}

// classMappingProblems checks that a storage class mapping names valid
// class names (several classes may map to one).
func classMappingProblems(m map[string]string) []string {
	var problems []string
	for _, from := range slices.Sorted(maps.Keys(m)) {
		for _, name := range []string{from, m[from]} {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				problems = append(problems, fmt.Sprintf("storageClassMappings %q: %s", name, msg))
			}
		}
	}
	return problems
}

// MapNamespace returns where a backed-up namespace is restored to.
func (s RestoreSpec) MapNamespace(ns string) string {
	if to, ok := s.NamespaceMapping[ns]; ok {
		return to
	}
	return ns
}

// Hash identifies a restore spec, as BackupSpec.Hash does a backup's.
func (s RestoreSpec) Hash() string {
	data, _ := json.Marshal(s) // maps encode with sorted keys
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
