package starter

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

type namespaceKey struct{}

// WithNamespace says that the backups, restores and schedules started
// with ctx serve resources of namespace ns, outside cairn's: their names
// are <ns>.<name> and they take ns only, and lists with ctx list ns's
// only. The controller sets it, and the API for its paths under
// /v1/namespaces/{namespace}; never a request's body.
func WithNamespace(ctx context.Context, ns string) context.Context {
	return context.WithValue(ctx, namespaceKey{}, ns)
}

// NamespaceOf is the namespace runs started with ctx serve ("": none).
func NamespaceOf(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}

// namespaceScopeProblems checks a run's name and reach against the
// namespace it serves. Without one (the API, the CLI, a resource in
// cairn's namespace) a name may not hold a dot: dotted names belong to
// namespaces. With one, the controller has named and confined the run,
// and this checks it did.
func namespaceScopeProblems(namespace, name string, included []string, cluster v1alpha1.ClusterResources) []string {
	if namespace == "" {
		return v1alpha1.RunNameProblems("name", name)
	}
	var problems []string
	if !ofNamespace(name, namespace) {
		problems = append(problems, fmt.Sprintf("name %q is not a run of namespace %s", name, namespace))
	}
	if !slices.Equal(included, []string{namespace}) {
		problems = append(problems, fmt.Sprintf("includedNamespaces %v: a run of namespace %s takes it only", included, namespace))
	}
	if cluster != v1alpha1.ClusterResourcesExclude {
		problems = append(problems, fmt.Sprintf("clusterResources %q: a run of namespace %s takes no cluster-scoped object", cluster, namespace))
	}
	return problems
}

// restoreScopeProblems adds to namespaceScopeProblems that the restore of
// a namespace restores a backup of that namespace.
func restoreScopeProblems(namespace string, req CreateRestoreRequest) []string {
	problems := namespaceScopeProblems(namespace, req.Name, req.IncludedNamespaces, req.ClusterResources)
	if namespace != "" && !ofNamespace(req.BackupName, namespace) {
		problems = append(problems, fmt.Sprintf("backupName %q is not a backup of namespace %s", req.BackupName, namespace))
	}
	return problems
}

// ofNamespace: runName is the name of a run of namespace's resources.
func ofNamespace(runName, namespace string) bool {
	ns, _, ok := v1alpha1.SplitRunName(runName)
	return ok && ns == namespace
}

// The API's paths under /v1/namespaces/{namespace} speak for one
// namespace: a name in them is the namespace's own, and what they start
// is what a resource of that kind in the namespace would start, checked
// by the same rules as cairn's admission webhook applies to resources.

// ownName is name as a name of namespace ns's own: "x" and "<ns>.x" are
// both x; a dot that names another namespace is left for the checks to
// refuse.
func ownName(ns, name string) string {
	if n, short, ok := v1alpha1.SplitRunName(name); ok && n == ns {
		return short
	}
	return name
}

// runNameIn is the run of namespace ns that name names ("" ns: name).
func runNameIn(ns, name string) string {
	if ns == "" {
		return name
	}
	return v1alpha1.NamespacedRunName(ns, ownName(ns, name))
}

// inNamespace: name is a run of ctx's namespace, or ctx has none.
func inNamespace(ctx context.Context, name string) bool {
	ns := NamespaceOf(ctx)
	return ns == "" || ofNamespace(name, ns)
}

// unreadableIn keeps, with a namespace in ctx, the entries of a list's
// Unreadable that name one of its runs.
func unreadableIn(ctx context.Context, unreadable []string) []string {
	ns := NamespaceOf(ctx)
	if ns == "" {
		return unreadable
	}
	return slices.DeleteFunc(unreadable, func(u string) bool { return !strings.Contains(u, ns+".") })
}

// scopeProblems makes a resource's problems read as the API body's:
// "metadata.name" is its name, and spec fields sit at its top.
func scopeProblems(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		if rest, ok := strings.CutPrefix(p, "metadata.name"); ok {
			p = "name" + rest
		}
		out[i] = strings.TrimPrefix(p, "spec.")
	}
	return &InvalidError{Problems: out}
}

// scopeBackup makes req, asked of namespace ns, the backup a Backup
// resource of that name in ns would start.
func scopeBackup(ns string, req *CreateBackupRequest) error {
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownName(ns, req.Name)}, Spec: req.BackupSpec}
	b.Spec.Name = ""
	if err := scopeProblems(b.NamespaceScopeProblems()); err != nil {
		return err
	}
	req.BackupSpec = b.ScopedToNamespace()
	return nil
}

// scopeRestore makes req, asked of namespace ns, the restore a Restore
// resource of that name in ns would start: a backup of ns, into ns.
func scopeRestore(ns string, req *CreateRestoreRequest) error {
	r := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownName(ns, req.Name)}, Spec: req.RestoreSpec}
	r.Spec.Name, r.Spec.BackupName = "", ownName(ns, req.BackupName)
	if err := scopeProblems(r.NamespaceScopeProblems()); err != nil {
		return err
	}
	req.RestoreSpec = r.ScopedToNamespace()
	return nil
}

// scopeSchedule makes spec, the schedule name asks of namespace ns, the
// one a Schedule resource of that name in ns would keep.
func scopeSchedule(ns, name string, spec *v1alpha1.ScheduleSpec) error {
	name = ownName(ns, name)
	if own := ownName(ns, spec.Name); own != "" && own != name {
		return &InvalidError{Problems: []string{fmt.Sprintf("name %q in the body differs from %q in the path; a schedule cannot be renamed", spec.Name, name)}}
	}
	sc := &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *spec}
	if err := scopeProblems(sc.NamespaceScopeProblems()); err != nil {
		return err
	}
	*spec = sc.ScopedToNamespace()
	return nil
}
