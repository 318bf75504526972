package objects

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Options say how to prepare objects for one restore.
type Options struct {
	Backup  string
	Restore string
	// MapNamespace returns the namespace a backed-up namespace restores into.
	MapNamespace func(string) string
	// PreserveNodePorts keeps Service nodePorts.
	PreserveNodePorts bool
	// KeepStatus keeps the status stanza, for types whose status is restored.
	KeepStatus bool
	// RestoredPV reports whether the PersistentVolume called name is
	// restored in this run; a claim bound to any other is provisioned anew.
	RestoredPV func(name string) bool
	// ClaimSnapshot returns the VolumeSnapshot a claim (by its backed-up
	// namespace and name) is restored from, or "".
	ClaimSnapshot func(namespace, name string) string
	// StorageClasses renames storage classes (old name to new) in claims,
	// volumes and StatefulSets' volume claim templates.
	StorageClasses map[string]string
}

func (o Options) mapNS(ns string) string {
	if o.MapNamespace == nil || ns == "" {
		return ns
	}
	return o.MapNamespace(ns)
}

// Prepare turns obj, as backed up, into the object to create in place.
// Owner references are kept: whether their owners exist is for the apply
// step to find out.
func Prepare(obj *unstructured.Unstructured, o Options) {
	sourceNS := obj.GetNamespace()
	group := obj.GroupVersionKind().Group
	var snap snapshotFacts
	if group == SnapshotGroup {
		snap = readSnapshotFacts(obj)
	}
	resetServerFields(obj)
	if !o.KeepStatus {
		unstructured.RemoveNestedField(obj.Object, "status")
	}
	obj.SetNamespace(o.mapNS(obj.GetNamespace()))

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelBackup] = o.Backup
	labels[v1alpha1.LabelRestore] = o.Restore
	obj.SetLabels(labels)

	switch kind := obj.GetKind(); {
	case group == "" && kind == "Namespace":
		obj.SetName(o.mapNS(obj.GetName()))
	case group == "" && kind == "Service":
		resetService(obj, o.PreserveNodePorts)
	case group == "" && kind == "Pod":
		// The scheduler places the restored pod: its old node may be
		// gone, and only the scheduler binds its claims' volumes.
		unstructured.RemoveNestedField(obj.Object, "spec", "nodeName")
	case group == "" && kind == "ServiceAccount":
		dropTokenSecretRefs(obj)
	case group == "" && kind == "Secret":
		resetTokenSecret(obj)
	case group == "" && kind == "PersistentVolumeClaim":
		if vs := claimSnapshot(o, sourceNS, obj.GetName()); vs != "" {
			restoreClaimFromSnapshot(obj, vs)
		} else {
			resetClaim(obj, o)
		}
	case group == SnapshotGroup && kind == "VolumeSnapshot":
		prepareVolumeSnapshot(obj, snap, o)
	case group == SnapshotGroup && kind == "VolumeSnapshotContent":
		prepareSnapshotContent(obj, snap, o)
	case group == "" && kind == "PersistentVolume":
		remapClaimRef(obj, o)
	case group == "rbac.authorization.k8s.io" && (kind == "RoleBinding" || kind == "ClusterRoleBinding"):
		remapSubjects(obj, o)
	}
	mapStorageClass(obj, o)
}

func claimSnapshot(o Options, namespace, name string) string {
	if o.ClaimSnapshot == nil {
		return ""
	}
	return o.ClaimSnapshot(namespace, name)
}

// resetServerFields removes the metadata the API server assigns.
func resetServerFields(obj *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
		"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
}

// resetService lets the target cluster assign cluster IPs (they belong to
// the source's service CIDR) and, unless asked otherwise, node ports.
func resetService(obj *unstructured.Unstructured, preserveNodePorts bool) {
	if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
	}
	if preserveNodePorts {
		return
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "healthCheckNodePort")
	ports, found, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	if !found {
		return
	}
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			delete(m, "nodePort")
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
}

const (
	secretTypeSAToken    = "kubernetes.io/service-account-token"
	annotationSAUID      = "kubernetes.io/service-account.uid"
	annotationBoundBy    = "pv.kubernetes.io/bind-completed"
	annotationBoundByCtl = "pv.kubernetes.io/bound-by-controller"
)

// resetTokenSecret drops a service-account token and its account's old
// UID: the cluster's token controller issues a new token, signed with the
// target cluster's key, into the restored Secret.
func resetTokenSecret(obj *unstructured.Unstructured) {
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != secretTypeSAToken {
		return
	}
	unstructured.RemoveNestedField(obj.Object, "data")
	unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", annotationSAUID)
}

// dropTokenSecretRefs removes the references to the token Secrets the
// cluster generated for the account (named <account>-token-<suffix>); the
// target cluster makes its own.
func dropTokenSecretRefs(obj *unstructured.Unstructured) {
	refs, found, _ := unstructured.NestedSlice(obj.Object, "secrets")
	if !found {
		return
	}
	prefix := obj.GetName() + "-token-"
	kept := make([]any, 0, len(refs))
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok {
			if name, _ := m["name"].(string); strings.HasPrefix(name, prefix) {
				continue
			}
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		unstructured.RemoveNestedField(obj.Object, "secrets")
		return
	}
	_ = unstructured.SetNestedSlice(obj.Object, kept, "secrets")
}

// resetClaim unbinds a claim whose volume is not restored with it, so the
// target cluster provisions a new volume instead of waiting for one that
// does not exist there.
func resetClaim(obj *unstructured.Unstructured, o Options) {
	volume, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName")
	if volume == "" || (o.RestoredPV != nil && o.RestoredPV(volume)) {
		return
	}
	unbindClaim(obj)
}

// unbindClaim removes what binding a claim to a volume writes into it.
func unbindClaim(obj *unstructured.Unstructured) {
	unstructured.RemoveNestedField(obj.Object, "spec", "volumeName")
	for _, a := range []string{annotationBoundBy, annotationBoundByCtl, "volume.beta.kubernetes.io/storage-provisioner",
		"volume.kubernetes.io/storage-provisioner", "volume.kubernetes.io/selected-node"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", a)
	}
}

// remapClaimRef points a restored volume at its claim's new namespace and
// forgets the old claim's identity, so the binder re-binds them.
func remapClaimRef(obj *unstructured.Unstructured, o Options) {
	ref, found, _ := unstructured.NestedMap(obj.Object, "spec", "claimRef")
	if !found {
		return
	}
	if ns, _ := ref["namespace"].(string); ns != "" {
		ref["namespace"] = o.mapNS(ns)
	}
	delete(ref, "uid")
	delete(ref, "resourceVersion")
	_ = unstructured.SetNestedMap(obj.Object, ref, "spec", "claimRef")
	unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", annotationBoundByCtl)
}

// remapSubjects maps the namespaces of ServiceAccount subjects.
func remapSubjects(obj *unstructured.Unstructured, o Options) {
	subjects, found, _ := unstructured.NestedSlice(obj.Object, "subjects")
	if !found {
		return
	}
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok {
			if ns, _ := m["namespace"].(string); ns != "" {
				m["namespace"] = o.mapNS(ns)
			}
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
}
