package kube

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/cairn-backup/cairn/internal/filter"
)

// Resource is one listable resource type at its preferred version.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	ShortNames []string
}

// GroupResource is the "resource.group" name ("configmaps" for core).
func (r Resource) GroupResource() string {
	return r.GVR.GroupResource().String()
}

// names are the spellings a user may use for the type in a filter.
func (r Resource) names() []string {
	n := []string{r.GroupResource(), r.GVR.Resource, strings.ToLower(r.Kind)}
	return append(n, r.ShortNames...)
}

// Discover returns every resource type the server lists at its preferred
// version, sorted by group-resource. Groups that fail discovery (an
// aggregated API whose backend is down) are returned in failed, not fatal.
func Discover(d discovery.DiscoveryInterface) (resources []Resource, failed map[string]error, err error) {
	lists, err := d.ServerPreferredResources()
	var groupErr *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &groupErr) {
		return nil, nil, fmt.Errorf("discover API resources: %w", err)
	}
	if groupErr != nil {
		failed = map[string]error{}
		for gv, e := range groupErr.Groups {
			failed[gv.String()] = e
		}
	}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r, "list", "get") {
				continue // subresources and types that cannot be listed
			}
			resources = append(resources, Resource{
				GVR:        gv.WithResource(r.Name),
				Kind:       r.Kind,
				Namespaced: r.Namespaced,
				ShortNames: r.ShortNames,
			})
		}
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].GroupResource() < resources[j].GroupResource() })
	return resources, failed, nil
}

func hasVerbs(r metav1.APIResource, verbs ...string) bool {
	have := map[string]bool{}
	for _, v := range r.Verbs {
		have[v] = true
	}
	for _, v := range verbs {
		if !have[v] {
			return false
		}
	}
	return true
}

// Match reports whether the resource passes the include/exclude globs.
func (r Resource) Match(g filter.Globs) bool { return g.Match(r.names()...) }

// UnknownResources returns the filter entries without glob characters that
// name no discovered resource, so a typo is caught before a backup starts.
func UnknownResources(resources []Resource, patterns []string) []string {
	known := map[string]bool{}
	for _, r := range resources {
		for _, n := range r.names() {
			known[n] = true
		}
	}
	var unknown []string
	for _, p := range patterns {
		if !filter.IsGlob(p) && !known[strings.ToLower(p)] {
			unknown = append(unknown, p)
		}
	}
	return unknown
}

// NeverBackedUp lists resource types a backup leaves out whatever the
// filter says, with the reason recorded in the plan. They are either
// ephemeral or recreated by the cluster itself on restore.
var NeverBackedUp = map[string]string{
	"events":                             "events are ephemeral and expire on their own",
	"events.events.k8s.io":               "events are ephemeral and expire on their own",
	"nodes":                              "nodes belong to the cluster's machines, not to its workloads",
	"csinodes.storage.k8s.io":            "CSINode objects are maintained by each node's kubelet",
	"volumeattachments.storage.k8s.io":   "volume attachments are maintained by the attach/detach controller",
	"leases.coordination.k8s.io":         "leases are short-lived leader-election and heartbeat records",
	"componentstatuses":                  "component statuses are computed on read",
	"tokenreviews.authentication.k8s.io": "reviews are requests, not stored objects",
}

// SkipReason returns why a resource type is never backed up, or "".
func SkipReason(r Resource) string {
	if reason, ok := NeverBackedUp[r.GroupResource()]; ok {
		return reason
	}
	if r.GVR.Group == "metrics.k8s.io" {
		return "metrics are computed on read"
	}
	return ""
}
