package objects

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NeverRestored lists resource types a restore leaves out whatever its
// filters say, with the reason: they belong to the cluster's machines or
// are ephemeral records. (Velero backups may hold some of them.)
var NeverRestored = map[string]string{
	"nodes":                            "nodes belong to the target cluster's machines",
	"events":                           "events are ephemeral records of the source cluster",
	"events.events.k8s.io":             "events are ephemeral records of the source cluster",
	"csinodes.storage.k8s.io":          "CSINode objects are maintained by each node's kubelet",
	"volumeattachments.storage.k8s.io": "volume attachments are maintained by the attach/detach controller",
	"leases.coordination.k8s.io":       "leases are short-lived leader-election and heartbeat records",
	"componentstatuses":                "component statuses are computed on read",
}

// Index is what the restore knows of the whole backup when it judges one
// item.
type Index struct {
	// Restored reports whether the object with this UID is restored.
	Restored func(uid string) bool
	// SelectorService reports whether the backup holds a Service called
	// namespace/name with a pod selector (its endpoints are generated).
	SelectorService func(namespace, name string) bool
	// WaitsForData reports whether the pod namespace/name (as backed up)
	// gets volume copies back: it is restored even when its controller
	// is, since its data is written into it, and the controller adopts it.
	WaitsForData func(namespace, name string) bool
}

// ownedByRestored are the types whose objects a controller recreates from
// its own spec: restoring them as well would start duplicates.
var ownedByRestored = map[string]bool{
	"pods":                     true,
	"replicasets.apps":         true,
	"controllerrevisions.apps": true,
	"jobs.batch":               true,
}

const (
	labelEndpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by"
	endpointSliceController     = "endpointslice-controller.k8s.io"
)

// SkipReason says why a restore leaves obj to the target cluster, or ""
// when it is restored.
func SkipReason(groupResource string, obj *unstructured.Unstructured, idx Index) string {
	switch groupResource {
	case "endpoints":
		if idx.SelectorService != nil && idx.SelectorService(obj.GetNamespace(), obj.GetName()) {
			return "maintained by the endpoints controller for the Service of the same name"
		}
	case "endpointslices.discovery.k8s.io":
		if obj.GetLabels()[labelEndpointSliceManagedBy] == endpointSliceController {
			return "maintained by the EndpointSlice controller for its Service"
		}
	}
	if !ownedByRestored[groupResource] {
		return ""
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	switch {
	case ref == nil:
		return ""
	case ref.Kind == "Node":
		return "mirror pod of a static pod; the node's kubelet recreates it"
	case groupResource == "pods" && idx.WaitsForData != nil && idx.WaitsForData(obj.GetNamespace(), obj.GetName()):
		return ""
	case idx.Restored != nil && idx.Restored(string(ref.UID)):
		return fmt.Sprintf("owned by %s %s, which is restored and recreates it", ref.Kind, ref.Name)
	}
	return ""
}
