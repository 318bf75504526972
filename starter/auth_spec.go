package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/workflows"
)

// namedNamespaces returns the namespaces a filter names, sorted and
// deduplicated, and whether it names them all: false for none (every
// namespace) or for a glob, whose matches nobody can know in advance.
func namedNamespaces(included []string) ([]string, bool) {
	if len(included) == 0 {
		return nil, false
	}
	for _, ns := range included {
		if filter.IsGlob(ns) {
			return nil, false
		}
	}
	names := slices.Clone(included)
	slices.Sort(names)
	return slices.Compact(names), true
}

// authorizeBackup: a backup reads every object of its namespaces, Secrets
// included, so its caller must be allowed to create backups in each of
// them, and cluster-wide when the spec does not name its namespaces or
// asks for every cluster-scoped object.
func (h *handler) authorizeBackup(ctx context.Context, req *CreateBackupRequest) error {
	namespaces, named := namedNamespaces(req.IncludedNamespaces)
	for _, ns := range namespaces {
		if err := h.authorize(ctx, Access{Verb: "create", Resource: ResourceBackups, Namespace: ns}); err != nil {
			return err
		}
	}
	if !named || req.ClusterResources == workflows.ClusterResourcesInclude {
		return h.authorize(ctx, Access{Verb: "create", Resource: ResourceBackups})
	}
	return nil
}

// authorizeRestore: a restore reads the backup's objects of its source
// namespaces and writes them into its target namespaces with the worker's
// rights, so its caller must be allowed to get backups in each source and
// to create restores in each target. Cluster-scoped objects need create
// on restores cluster-wide: without it, the restore skips them and says
// why, unless the spec asked for them explicitly (403).
func (h *handler) authorizeRestore(ctx context.Context, req *CreateRestoreRequest) error {
	sources, named := namedNamespaces(req.IncludedNamespaces)
	if !named {
		if err := h.authorize(ctx, Access{Verb: "get", Resource: ResourceBackups, Name: req.BackupName}); err != nil {
			return err
		}
		return h.authorize(ctx, Access{Verb: "create", Resource: ResourceRestores})
	}
	for _, ns := range sources {
		if err := h.authorize(ctx, Access{Verb: "get", Resource: ResourceBackups, Name: req.BackupName, Namespace: ns}); err != nil {
			return err
		}
	}
	targets := make([]string, 0, len(sources))
	for _, ns := range sources {
		if to, ok := req.NamespaceMapping[ns]; ok {
			ns = to
		}
		targets = append(targets, ns)
	}
	slices.Sort(targets)
	for _, ns := range slices.Compact(targets) {
		if err := h.authorize(ctx, Access{Verb: "create", Resource: ResourceRestores, Namespace: ns}); err != nil {
			return err
		}
	}
	clusterWide := Access{Verb: "create", Resource: ResourceRestores}
	err := h.authorize(ctx, clusterWide)
	var forbidden *ForbiddenError
	if errors.As(err, &forbidden) && req.ClusterResources != workflows.ClusterResourcesInclude {
		req.ClusterScopedDenied = fmt.Sprintf("%s may not restore cluster-scoped objects (needs %s)", userName(ctx), clusterWide)
		return nil
	}
	return err
}
