package httpapi

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// admitBackup scopes a request of a namespace's path to the namespace;
// then the caller must be allowed to create backups where the spec reads
// (v1alpha1.BackupSpec.BackupAccess).
func (h *handler) admitBackup(ctx context.Context, req *starter.CreateBackupRequest) error {
	if ns := starter.NamespaceOf(ctx); ns != "" {
		if err := scopeBackup(ns, req); err != nil {
			return err
		}
	}
	return h.authorizeBackupSpec(ctx, req.BackupSpec)
}

func (h *handler) authorizeBackupSpec(ctx context.Context, spec v1alpha1.BackupSpec) error {
	namespaces, clusterWide := spec.BackupAccess()
	for _, ns := range namespaces {
		if err := h.authorize(ctx, Access{Verb: "create", Resource: v1alpha1.ResourceBackups, Namespace: ns}); err != nil {
			return err
		}
	}
	if clusterWide {
		return h.authorize(ctx, Access{Verb: "create", Resource: v1alpha1.ResourceBackups})
	}
	return nil
}

// admitSchedule scopes the schedule name asks, on a namespace's path, to
// the namespace. Every run of a schedule acts as whoever last set it, so
// setting it needs what starting its run would: create backups where the
// template reads, or create etcdsnapshots for that kind. Each run is
// authorized again when it starts (activities/cluster).
func (h *handler) admitSchedule(ctx context.Context, name string, spec *v1alpha1.ScheduleSpec) error {
	if ns := starter.NamespaceOf(ctx); ns != "" {
		if err := scopeSchedule(ns, name, spec); err != nil {
			return err
		}
	}
	if spec.RunKind() == v1alpha1.KindEtcdSnapshot {
		return h.authorize(ctx, Access{Verb: "create", Resource: v1alpha1.ResourceEtcdSnapshots})
	}
	return h.authorizeBackupSpec(ctx, spec.Template)
}

// admitNewSchedule is admitSchedule for a body that names the schedule.
func (h *handler) admitNewSchedule(ctx context.Context, spec *v1alpha1.ScheduleSpec) error {
	return h.admitSchedule(ctx, spec.Name, spec)
}

// admitRestore scopes a request of a namespace's path to the namespace,
// then authorizes it: a restore reads the backup's objects of its source
// namespaces and writes them into its target namespaces with the worker's
// rights, so its caller must be allowed to get backups in each source and
// to create restores in each target. Cluster-scoped objects need create
// on restores cluster-wide: without it, the restore skips them and says
// why, unless the spec asked for them explicitly (403).
func (h *handler) admitRestore(ctx context.Context, req *starter.CreateRestoreRequest) error {
	if ns := starter.NamespaceOf(ctx); ns != "" {
		if err := scopeRestore(ns, req); err != nil {
			return err
		}
	}
	sources, named := v1alpha1.NamedNamespaces(req.IncludedNamespaces)
	if !named {
		if err := h.authorize(ctx, Access{Verb: "get", Resource: v1alpha1.ResourceBackups, Name: req.BackupName}); err != nil {
			return err
		}
		return h.authorize(ctx, Access{Verb: "create", Resource: v1alpha1.ResourceRestores})
	}
	for _, ns := range sources {
		if err := h.authorize(ctx, Access{Verb: "get", Resource: v1alpha1.ResourceBackups, Name: req.BackupName, Namespace: ns}); err != nil {
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
		if err := h.authorize(ctx, Access{Verb: "create", Resource: v1alpha1.ResourceRestores, Namespace: ns}); err != nil {
			return err
		}
	}
	clusterWide := Access{Verb: "create", Resource: v1alpha1.ResourceRestores}
	err := h.authorize(ctx, clusterWide)
	var forbidden *starter.ForbiddenError
	if errors.As(err, &forbidden) && req.ClusterResources != v1alpha1.ClusterResourcesInclude {
		req.ClusterScopedDenied = fmt.Sprintf("%s may not restore cluster-scoped objects (needs %s)", userName(ctx), clusterWide)
		return nil
	}
	return err
}
