package starter

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

type namespaceKey struct{}

// WithNamespace says that schedules made or changed with ctx serve a
// Schedule resource of namespace ns, outside cairn's: their names are
// <ns>.<name> and their runs take ns only. Only the controller sets it.
func WithNamespace(ctx context.Context, ns string) context.Context {
	return context.WithValue(ctx, namespaceKey{}, ns)
}

func namespaceOf(ctx context.Context) string {
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
	if !strings.HasPrefix(name, namespace+".") {
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
func restoreScopeProblems(req CreateRestoreRequest) []string {
	problems := namespaceScopeProblems(req.Namespace, req.Name, req.IncludedNamespaces, req.ClusterResources)
	if req.Namespace != "" && !strings.HasPrefix(req.BackupName, req.Namespace+".") {
		problems = append(problems, fmt.Sprintf("backupName %q is not a backup of namespace %s", req.BackupName, req.Namespace))
	}
	return problems
}
