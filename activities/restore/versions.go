package restore

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/cairn-backup/cairn/internal/kube"
)

// targetAPI is what the target cluster serves.
type targetAPI struct {
	// preferred maps a group-resource to the resource at its preferred version.
	preferred map[string]kube.Resource
	// versions maps a group to the versions it serves, preferred first.
	versions map[string][]string
}

func discoverTarget(d discovery.DiscoveryInterface) (*targetAPI, error) {
	resources, _, err := kube.Discover(d)
	if err != nil {
		return nil, err
	}
	t := &targetAPI{preferred: map[string]kube.Resource{}, versions: map[string][]string{}}
	for _, r := range resources {
		t.preferred[r.GroupResource()] = r
	}
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discover API groups: %w", err)
	}
	for _, g := range groups.Groups {
		vs := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				vs = append(vs, v.Version)
			}
		}
		t.versions[g.Name] = vs
	}
	return t, nil
}

// checkScopes refuses a backup that holds a type the target cluster
// serves at the other scope: a cluster-scoped type (a ClusterRoleBinding,
// a webhook configuration) stored under a namespace's path would pass
// for a namespace's object. Whether a type is namespaced comes from the
// target's discovery, never from the backup.
func (t *targetAPI) checkScopes(idx *backupIndex) error {
	for _, gr := range slices.Sorted(maps.Keys(idx.types)) {
		ti := idx.types[gr]
		r, served := t.preferred[gr]
		if !served || r.Namespaced == ti.namespaced {
			continue
		}
		scope := map[bool]string{true: "namespaced", false: "cluster-scoped"}
		return &corruptError{fmt.Errorf("%s is %s in the cluster, but the backup stores it as %s", gr, scope[r.Namespaced], scope[ti.namespaced])}
	}
	return nil
}

// chooseVersion picks the version of a backed-up type to restore: the
// target's preferred version when the backup holds it, else the source's
// preferred version when the target serves it, else any version both
// have. ok is false when the target serves none of the backed-up versions.
func (t *targetAPI) chooseVersion(gr string, ti *typeIndex) (version string, ok bool) {
	group := schema.ParseGroupResource(gr).Group
	served := t.versions[group]
	if r, found := t.preferred[gr]; found && ti.versions[r.GVR.Version] {
		return r.GVR.Version, true
	}
	if src := ti.sourceVersion(); slices.Contains(served, src) {
		return src, true
	}
	for _, v := range served {
		if ti.versions[v] {
			return v, true
		}
	}
	return "", false
}

// notServedReason explains why a type cannot be restored into the target.
func (t *targetAPI) notServedReason(gr string, ti *typeIndex) string {
	have := make([]string, 0, len(ti.versions))
	for v := range ti.versions {
		have = append(have, v)
	}
	sort.Strings(have)
	group := schema.ParseGroupResource(gr).Group
	if served := t.versions[group]; len(served) > 0 {
		return fmt.Sprintf("backed up at %s; the target cluster serves %s only at %s",
			strings.Join(have, ", "), groupName(group), strings.Join(served, ", "))
	}
	return fmt.Sprintf("the target cluster does not serve %s, and the restore holds no CustomResourceDefinition for it", gr)
}

func groupName(g string) string {
	if g == "" {
		return "the core group"
	}
	return g
}
