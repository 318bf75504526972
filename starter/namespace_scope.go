package starter

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	return slices.DeleteFunc(unreadable, func(u string) bool {
		// "<name>: <why>", or "location <name>: <name>: <why>" for a
		// location other than the default.
		if rest, ok := strings.CutPrefix(u, "location "); ok {
			_, u, _ = strings.Cut(rest, ": ")
		}
		name, _, _ := strings.Cut(u, ": ")
		return !ofNamespace(name, ns)
	})
}
