package restore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

var (
	configMapsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	storageClassesGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
)

// veleroClassMapLabel marks Velero's change-storage-class ConfigMaps:
// their data maps old class names to new ones.
const veleroClassMapLabel = "velero.io/change-storage-class=RestoreItemAction"

// storageClasses is the restore's storage class mapping: Velero's
// change-storage-class ConfigMaps in the worker's namespace, overridden
// by the spec's own. A class it maps to that the cluster does not have
// fails the restore before anything is created.
func (a *Activities) storageClasses(ctx context.Context, spec v1alpha1.RestoreSpec) (map[string]string, error) {
	mapping := map[string]string{}
	if a.ConfigNamespace != "" {
		list, err := a.Clients.Dynamic.Resource(configMapsGVR).Namespace(a.ConfigNamespace).List(ctx, metav1.ListOptions{LabelSelector: veleroClassMapLabel})
		if err != nil {
			return nil, fmt.Errorf("list storage class mappings in namespace %s: %w", a.ConfigNamespace, err)
		}
		items := list.Items
		slices.SortFunc(items, func(x, y unstructured.Unstructured) int { return strings.Compare(x.GetName(), y.GetName()) })
		for _, cm := range items {
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			maps.Copy(mapping, data)
		}
	}
	maps.Copy(mapping, spec.StorageClassMappings)
	var missing []string
	for _, to := range slices.Sorted(maps.Keys(invert(mapping))) {
		_, err := a.Clients.Dynamic.Resource(storageClassesGVR).Get(ctx, to, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			missing = append(missing, to)
		case err != nil:
			return nil, fmt.Errorf("get storage class %s: %w", to, err)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("storage class mapping: the cluster has no StorageClass %s", strings.Join(missing, ", "))
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
	}
	return mapping, nil
}

// invert maps each value of m to one of its keys.
func invert(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[v] = k
	}
	return out
}
