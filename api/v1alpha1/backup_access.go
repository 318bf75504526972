package v1alpha1

import (
	"slices"

	"github.com/cairn-backup/cairn/internal/filter"
)

// APIGroup is the API group of cairn's resources in RBAC rules: a Role
// that grants `create` on `backups` in group cairn.io lets its subjects
// back up the Role's namespace through the starter API.
const APIGroup = "cairn.io"

// The resources of APIGroup, in RBAC rules and in the CRDs: what a run
// of each kind is authorized on, through the API and as a resource.
const (
	ResourceBackups       = "backups"
	ResourceRestores      = "restores"
	ResourceSchedules     = "schedules"
	ResourceEtcdSnapshots = "etcdsnapshots"
)

// NamedNamespaces returns the namespaces a filter names, sorted and
// deduplicated, and whether it names them all: false for none (every
// namespace) or for a glob, whose matches nobody can know in advance.
func NamedNamespaces(included []string) ([]string, bool) {
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

// BackupAccess is where whoever a backup acts as must be allowed to
// create backups: in each namespace the spec names, and cluster-wide when
// it does not name them all or asks for every cluster-scoped object.
// A backup reads every object of its namespaces, Secrets included.
func (s BackupSpec) BackupAccess() (namespaces []string, clusterWide bool) {
	namespaces, named := NamedNamespaces(s.IncludedNamespaces)
	return namespaces, !named || s.ClusterResources == ClusterResourcesInclude
}
