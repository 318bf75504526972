package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// IdentityAnnotation is id as the value of AnnotationActingAs.
func IdentityAnnotation(id Identity) string {
	data, _ := json.Marshal(id) // strings, lists and maps always encode
	return string(data)
}

// ParseIdentityAnnotation reads the value of AnnotationActingAs.
func ParseIdentityAnnotation(value string) (*Identity, error) {
	if value == "" {
		return nil, fmt.Errorf("annotation %s is missing", AnnotationActingAs)
	}
	var id Identity
	if err := json.Unmarshal([]byte(value), &id); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationActingAs, err)
	}
	if id.Username == "" {
		return nil, fmt.Errorf("annotation %s names no user", AnnotationActingAs)
	}
	return &id, nil
}

// NamespacedRunName is the name in cairn of the run of a resource outside
// cairn's own namespace: <namespace>.<name>. A namespace name holds no
// dot, and names given anywhere else may not hold one (RunNameProblems),
// so a team's names never collide with another team's or with names
// given through the API.
func NamespacedRunName(namespace, name string) string {
	return namespace + "." + name
}

// SplitRunName undoes NamespacedRunName: ok is false for the name of a
// run that serves no namespace's resource.
func SplitRunName(runName string) (namespace, name string, ok bool) {
	return strings.Cut(runName, ".")
}

// RunNameProblems checks a backup or restore name given through the API,
// the CLI or a resource in cairn's namespace: dotted names are kept for
// the runs of other namespaces' resources.
func RunNameProblems(field, name string) []string {
	if _, _, namespaced := SplitRunName(name); namespaced {
		return []string{fmt.Sprintf("%s %q: names with a dot are kept for the resources of namespaces "+
			"(<namespace>.<name>); choose a name without one", field, name)}
	}
	return nil
}

// namespacedNameProblems checks the name of a resource in namespace ns
// whose run is named NamespacedRunName(ns, name), at most max characters.
func namespacedNameProblems(field, ns, name string, max int) []string {
	var problems []string
	for _, msg := range validation.IsDNS1123Label(name) {
		problems = append(problems, fmt.Sprintf("%s %q: %s", field, name, msg))
	}
	if run := NamespacedRunName(ns, name); len(run) > max {
		problems = append(problems, fmt.Sprintf("%s %q: its run is named %s, %d characters; at most %d", field, name, run, len(run), max))
	}
	return problems
}

// reachProblems checks a backup or restore spec, at field prefix (spec.
// or spec.template.), of a kind of resource in namespace ns: it takes ns
// only, and no cluster-scoped object.
func reachProblems(prefix, kind, ns string, included []string, cluster ClusterResources) []string {
	var problems []string
	for _, in := range included {
		if in != ns {
			problems = append(problems, fmt.Sprintf("%sincludedNamespaces: %q is not this namespace: a %s in %s takes %s only",
				prefix, in, kind, ns, ns))
		}
	}
	if cluster != "" && cluster != ClusterResourcesExclude {
		problems = append(problems, fmt.Sprintf("%sclusterResources %q: a %s in %s takes no cluster-scoped object; "+
			"leave it out or set exclude", prefix, cluster, kind, ns))
	}
	return problems
}

// NamespaceScopeProblems lists what a Backup resource of namespace ns,
// which is not cairn's own, may not ask: its backup takes ns only, and
// no cluster-scoped object.
func (b *Backup) NamespaceScopeProblems() []string {
	problems := namespacedNameProblems("metadata.name", b.Namespace, b.Name, maxRunName)
	return append(problems, reachProblems("spec.", "Backup", b.Namespace, b.Spec.IncludedNamespaces, b.Spec.ClusterResources)...)
}

// NamespaceScopeProblems lists what a Restore resource of namespace ns,
// which is not cairn's own, may not ask: it restores a backup of ns,
// into ns only, and no cluster-scoped object.
func (r *Restore) NamespaceScopeProblems() []string {
	ns := r.Namespace
	problems := namespacedNameProblems("metadata.name", ns, r.Name, maxRunName)
	_, _, otherNamespace := SplitRunName(r.Spec.BackupName)
	switch {
	case r.Spec.ScheduleName != "":
		problems = append(problems, fmt.Sprintf("spec.scheduleName: a Restore in %s names the backup it restores "+
			"(spec.backupName); Schedules outside cairn's namespace are not supported yet", ns))
	case otherNamespace:
		problems = append(problems, fmt.Sprintf("spec.backupName %q names a backup of another namespace: "+
			"a Restore in %s restores the backups of %s, by their name in it", r.Spec.BackupName, ns, ns))
	default:
		problems = append(problems, namespacedNameProblems("spec.backupName", ns, r.Spec.BackupName, maxRunName)...)
	}
	for from, to := range r.Spec.NamespaceMapping {
		if from != ns || to != ns {
			problems = append(problems, fmt.Sprintf("spec.namespaceMapping: %s→%s: a Restore in %s restores into %s only",
				from, to, ns, ns))
		}
	}
	return append(problems, reachProblems("spec.", "Restore", ns, r.Spec.IncludedNamespaces, r.Spec.ClusterResources)...)
}

// NamespaceScopeProblems lists what a Schedule resource of namespace ns,
// which is not cairn's own, may not ask: its runs back up ns only, no
// cluster-scoped object, and are named <ns>.<name>-<time>.
func (sc *Schedule) NamespaceScopeProblems() []string {
	problems := namespacedNameProblems("metadata.name", sc.Namespace, sc.Name, maxScheduleName)
	if sc.Spec.Kind != "" && sc.Spec.Kind != KindBackup {
		problems = append(problems, fmt.Sprintf("spec.kind %q: a Schedule in %s backs up its namespace; etcd snapshots are the cluster's",
			sc.Spec.Kind, sc.Namespace))
	}
	return append(problems, reachProblems("spec.template.", "Schedule", sc.Namespace,
		sc.Spec.Template.IncludedNamespaces, sc.Spec.Template.ClusterResources)...)
}

// ScopedToNamespace is the spec the Temporal Schedule of a Schedule
// outside cairn's namespace is kept at: its own name, its namespace only.
func (sc *Schedule) ScopedToNamespace() ScheduleSpec {
	spec := sc.Spec
	spec.Name = NamespacedRunName(sc.Namespace, sc.Name)
	spec.Template.IncludedNamespaces = []string{sc.Namespace}
	spec.Template.ClusterResources = ClusterResourcesExclude
	return spec
}

// ScopedToNamespace is the spec the run of a Backup outside cairn's
// namespace starts with: its own name, its namespace only.
func (b *Backup) ScopedToNamespace() BackupSpec {
	spec := b.Spec
	spec.Name = NamespacedRunName(b.Namespace, b.Name)
	spec.IncludedNamespaces = []string{b.Namespace}
	spec.ClusterResources = ClusterResourcesExclude
	return spec
}

// ScopedToNamespace is the spec the run of a Restore outside cairn's
// namespace starts with: its namespace's backup, into its namespace only.
func (r *Restore) ScopedToNamespace() RestoreSpec {
	spec := r.Spec
	spec.Name = NamespacedRunName(r.Namespace, r.Name)
	spec.BackupName = NamespacedRunName(r.Namespace, r.Spec.BackupName)
	spec.IncludedNamespaces = []string{r.Namespace}
	spec.ClusterResources = ClusterResourcesExclude
	return spec
}
