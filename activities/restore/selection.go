package restore

import (
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
)

// selection is a restore spec's filters, compiled.
type selection struct {
	spec       v1alpha1.RestoreSpec
	namespaces filter.Globs
	resources  filter.Globs
	labels     filter.Labels
	status     *filter.Globs
	// allCluster: every cluster-scoped type is restored (include, or auto
	// with every namespace and no label selector).
	allCluster bool
}

func newSelection(spec v1alpha1.RestoreSpec) (*selection, error) {
	s := &selection{spec: spec}
	var err error
	if s.namespaces, err = filter.NewGlobs(spec.IncludedNamespaces, spec.ExcludedNamespaces); err != nil {
		return nil, err
	}
	if s.resources, err = filter.NewGlobs(spec.IncludedResources, spec.ExcludedResources); err != nil {
		return nil, err
	}
	if s.labels, err = filter.NewLabels(spec.LabelSelector, spec.OrLabelSelectors); err != nil {
		return nil, err
	}
	if rs := spec.RestoreStatus; rs != nil {
		g, err := filter.NewGlobs(rs.IncludedResources, rs.ExcludedResources)
		if err != nil {
			return nil, err
		}
		s.status = &g
	}
	if spec.ClusterScopedDenied != "" {
		s.spec.ClusterResources = v1alpha1.ClusterResourcesExclude
	}
	switch s.spec.ClusterResources {
	case v1alpha1.ClusterResourcesInclude:
		s.allCluster = true
	case v1alpha1.ClusterResourcesAuto, "":
		s.allCluster = s.namespaces.IncludesEverything() && s.labels.Empty()
	}
	return s, nil
}

// item reports whether an object of the backup passes the namespace and
// label filters. Namespace objects are selected by their name.
func (s *selection) item(groupResource, namespace, name string, labels map[string]string) bool {
	switch {
	case namespace != "" && !s.namespaces.Match(namespace):
		return false
	case groupResource == "namespaces" && !s.namespaces.Match(name):
		return false
	}
	return s.labels.Match(labels)
}

// itemOrRelated is item, except that a workload's related cluster-scoped
// object passes whatever its labels while the restore judges them by
// reference: a pod selected by its labels needs its PriorityClass.
func (s *selection) itemOrRelated(groupResource, namespace, name string, labels map[string]string) bool {
	if namespace == "" && s.relatedByReference() && workloadDependency(groupResource) {
		return true
	}
	return s.item(groupResource, namespace, name, labels)
}

// relatedByReference reports whether cluster-scoped objects are judged
// one by one, by what the restored objects need (auto mode, not the
// whole cluster).
func (s *selection) relatedByReference() bool {
	return !s.allCluster && s.spec.ClusterResources != v1alpha1.ClusterResourcesInclude &&
		s.spec.ClusterResources != v1alpha1.ClusterResourcesExclude
}

// resource reports whether the resource filters select a type, by any of
// the names a user may spell it with.
func (s *selection) resource(names ...string) bool { return s.resources.Match(names...) }

// restoreStatus reports whether a type's status is restored.
func (s *selection) restoreStatus(names ...string) bool {
	return s.status != nil && s.status.Match(names...)
}
