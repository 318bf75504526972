package objects

import (
	"slices"

	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Group-resources of the cluster-scoped objects a namespace's workloads
// need to run in another cluster.
const (
	ClusterRolesResource        = "clusterroles.rbac.authorization.k8s.io"
	ClusterRoleBindingsResource = "clusterrolebindings.rbac.authorization.k8s.io"
	RoleBindingsResource        = "rolebindings.rbac.authorization.k8s.io"
	StorageClassesResource      = "storageclasses.storage.k8s.io"
	PriorityClassesResource     = "priorityclasses.scheduling.k8s.io"
	RuntimeClassesResource      = "runtimeclasses.node.k8s.io"
	IngressClassesResource      = "ingressclasses.networking.k8s.io"
	PersistentVolumesResource   = "persistentvolumes"
	ClaimsResource              = "persistentvolumeclaims"
)

// WorkloadDependencies are the cluster-scoped types a namespace backup
// takes by reference (besides PersistentVolumes and CRDs), in the order
// they are collected: roles after the bindings that name them.
var WorkloadDependencies = []string{
	ClusterRoleBindingsResource, ClusterRolesResource, StorageClassesResource,
	PriorityClassesResource, RuntimeClassesResource, IngressClassesResource,
}

// Reference names a cluster-scoped object that a namespaced one needs.
type Reference struct {
	Resource string
	Name     string
}

// podSpecPaths are where each workload type holds its pod spec.
var podSpecPaths = map[string]string{
	"pods":                   "spec",
	"replicationcontrollers": "spec.template.spec",
	"deployments.apps":       "spec.template.spec",
	"replicasets.apps":       "spec.template.spec",
	"statefulsets.apps":      "spec.template.spec",
	"daemonsets.apps":        "spec.template.spec",
	"jobs.batch":             "spec.template.spec",
	"cronjobs.batch":         "spec.jobTemplate.spec.template.spec",
	"podtemplates":           "template.spec",
}

const ingressesResource = "ingresses.networking.k8s.io"

// ReferencingTypes are the namespaced types whose objects may reference
// cluster-scoped ones; References reads nothing from other types.
func ReferencingTypes() []string {
	types := []string{ClaimsResource, RoleBindingsResource, ingressesResource}
	for gr := range podSpecPaths {
		types = append(types, gr)
	}
	slices.Sort(types)
	return types
}

// References lists the cluster-scoped objects that data, a stored object
// of type groupResource, names: the volume and storage class of a claim,
// the ClusterRole of a RoleBinding, the priority, runtime and storage
// classes of a pod spec (in any workload's template), the class of an
// Ingress. It reads only the fields it needs.
func References(groupResource string, data []byte) []Reference {
	var refs []Reference
	add := func(resource, name string) {
		if name != "" {
			refs = append(refs, Reference{Resource: resource, Name: name})
		}
	}
	switch groupResource {
	case ClaimsResource:
		f := gjson.GetManyBytes(data, "spec.volumeName", "spec.storageClassName", `metadata.annotations.volume\.beta\.kubernetes\.io/storage-class`)
		add(PersistentVolumesResource, f[0].String())
		add(StorageClassesResource, f[1].String())
		add(StorageClassesResource, f[2].String())
		return refs
	case RoleBindingsResource:
		if ref := gjson.GetManyBytes(data, "roleRef.kind", "roleRef.name"); ref[0].String() == "ClusterRole" {
			add(ClusterRolesResource, ref[1].String())
		}
		return refs
	case ingressesResource:
		add(IngressClassesResource, gjson.GetBytes(data, "spec.ingressClassName").String())
		return refs
	case "statefulsets.apps":
		gjson.GetBytes(data, "spec.volumeClaimTemplates.#.spec.storageClassName").ForEach(func(_, v gjson.Result) bool {
			add(StorageClassesResource, v.String())
			return true
		})
	}
	path, ok := podSpecPaths[groupResource]
	if !ok {
		return refs
	}
	spec := gjson.GetBytes(data, path)
	f := gjson.GetMany(spec.Raw, "priorityClassName", "runtimeClassName")
	add(PriorityClassesResource, f[0].String())
	add(RuntimeClassesResource, f[1].String())
	spec.Get("volumes.#.ephemeral.volumeClaimTemplate.spec.storageClassName").ForEach(func(_, v gjson.Result) bool {
		add(StorageClassesResource, v.String())
		return true
	})
	return refs
}

// ServiceAccountSubjects are the ServiceAccount subjects of a
// (Cluster)RoleBinding stored as data, as "namespace/name".
func ServiceAccountSubjects(data []byte) []string {
	var keys []string
	gjson.GetBytes(data, "subjects").ForEach(func(_, s gjson.Result) bool {
		if f := gjson.GetMany(s.Raw, "kind", "namespace", "name"); f[0].String() == "ServiceAccount" && f[1].String() != "" {
			keys = append(keys, f[1].String()+"/"+f[2].String())
		}
		return true
	})
	return keys
}

// KeepServiceAccountSubjects drops from a (Cluster)RoleBinding every
// subject but the ServiceAccounts ("namespace/name") keep holds: a
// binding restored for a namespace's sake grants nothing to anyone else.
func KeepServiceAccountSubjects(obj *unstructured.Unstructured, keep func(key string) bool) {
	subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
	kept := []any{}
	for _, s := range subjects {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		kind, _ := m["kind"].(string)
		ns, _ := m["namespace"].(string)
		name, _ := m["name"].(string)
		if kind == "ServiceAccount" && keep(ns+"/"+name) {
			kept = append(kept, m)
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, kept, "subjects")
}

// BoundClusterRole is the ClusterRole a ClusterRoleBinding, stored as
// data, binds ("" if its roleRef names something else).
func BoundClusterRole(data []byte) string {
	if ref := gjson.GetManyBytes(data, "roleRef.kind", "roleRef.name"); ref[0].String() == "ClusterRole" {
		return ref[1].String()
	}
	return ""
}
