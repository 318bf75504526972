package objects

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// mapStorageClass renames, by o.StorageClasses, the storage class of a
// claim, of a volume, and of a StatefulSet's volume claim templates, so
// they restore into a cluster whose classes are named differently.
func mapStorageClass(obj *unstructured.Unstructured, o Options) {
	if len(o.StorageClasses) == 0 {
		return
	}
	rename := func(fields map[string]any, path ...string) {
		if class, ok, _ := unstructured.NestedString(fields, path...); ok {
			if to, mapped := o.StorageClasses[class]; mapped {
				_ = unstructured.SetNestedField(fields, to, path...)
			}
		}
	}
	switch obj.GroupVersionKind().GroupKind().String() {
	case "PersistentVolumeClaim", "PersistentVolume":
		rename(obj.Object, "spec", "storageClassName")
		if obj.GetKind() == "PersistentVolumeClaim" {
			// The beta annotation still names the class on old claims.
			if class := obj.GetAnnotations()[betaStorageClass]; class != "" {
				if to, mapped := o.StorageClasses[class]; mapped {
					annotations := obj.GetAnnotations()
					annotations[betaStorageClass] = to
					obj.SetAnnotations(annotations)
				}
			}
		}
	case "StatefulSet.apps":
		templates, ok, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
		if !ok {
			return
		}
		for _, t := range templates {
			if claim, ok := t.(map[string]any); ok {
				rename(claim, "spec", "storageClassName")
			}
		}
		_ = unstructured.SetNestedSlice(obj.Object, templates, "spec", "volumeClaimTemplates")
	}
}

// betaStorageClass is the annotation claims named their class with
// before spec.storageClassName.
const betaStorageClass = "volume.beta.kubernetes.io/storage-class"
