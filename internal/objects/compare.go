package objects

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// comparable is obj without what differs between two copies of the same
// object in two places: server fields, status, owner UIDs, the restore's
// labels (when !keepLabels), and what Prepare resets.
func comparable(obj *unstructured.Unstructured, preserveNodePorts, keepLabels bool) *unstructured.Unstructured {
	c := obj.DeepCopy()
	resetServerFields(c)
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "ownerReferences")
	if !keepLabels {
		labels := c.GetLabels()
		delete(labels, v1alpha1.LabelBackup)
		delete(labels, v1alpha1.LabelRestore)
		if len(labels) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", "labels")
		} else {
			c.SetLabels(labels)
		}
	}
	if c.GroupVersionKind().Group == "" {
		switch c.GetKind() {
		case "Service":
			resetService(c, preserveNodePorts)
		case "Secret":
			resetTokenSecret(c)
		case "ServiceAccount":
			dropTokenSecretRefs(c)
		case "Pod":
			// Scheduling too.
			unstructured.RemoveNestedField(c.Object, "spec", "nodeName")
		case "PersistentVolumeClaim":
			// Binding is the cluster's business, and immutable once done.
			unbindClaim(c)
		case "PersistentVolume":
			unstructured.RemoveNestedField(c.Object, "spec", "claimRef", "uid")
			unstructured.RemoveNestedField(c.Object, "spec", "claimRef", "resourceVersion")
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations", annotationBoundByCtl)
		}
	}
	// Removing the last annotation leaves an empty map; none is the same.
	if a, found, _ := unstructured.NestedMap(c.Object, "metadata", "annotations"); found && len(a) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	return c
}

// Equivalent reports whether existing already is what desired (a prepared
// object) would create, ignoring what the server assigns.
func Equivalent(existing, desired *unstructured.Unstructured, preserveNodePorts bool) bool {
	return equality.Semantic.DeepEqual(comparable(existing, preserveNodePorts, false).Object,
		comparable(desired, preserveNodePorts, false).Object)
}

// UpdatePatch is the JSON merge patch that takes existing to the
// backed-up state in desired, restore labels included. Fields the server
// assigns, and those Prepare resets, are left as they are.
func UpdatePatch(existing, desired *unstructured.Unstructured, preserveNodePorts bool) ([]byte, error) {
	from, err := json.Marshal(comparable(existing, preserveNodePorts, true).Object)
	if err != nil {
		return nil, fmt.Errorf("encode existing object: %w", err)
	}
	to, err := json.Marshal(comparable(desired, preserveNodePorts, true).Object)
	if err != nil {
		return nil, fmt.Errorf("encode backed-up object: %w", err)
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("compute patch: %w", err)
	}
	return patch, nil
}
