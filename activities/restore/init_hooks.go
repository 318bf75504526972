package restore

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cairn-backup/cairn/activities/hooks/hookspec"
	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// addInitHooks puts a restored pod's init hooks (its annotations', or the
// spec's) before its own init containers. A malformed init hook
// annotation keeps the pod from being restored without it: the returned
// problem is the reason it is skipped.
func addInitHooks(obj *unstructured.Unstructured, sourceNamespace string, spec *v1alpha1.RestoreHooks) string {
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
		return fmt.Sprintf("not a pod: %v", err)
	}
	inits, problems := hookspec.InitContainers(&pod, sourceNamespace, spec)
	if len(problems) > 0 {
		return "restore init hook: " + strings.Join(problems, "; ")
	}
	if len(inits) == 0 {
		return ""
	}
	existing, _, _ := unstructured.NestedSlice(obj.Object, "spec", "initContainers")
	added := make([]any, 0, len(inits)+len(existing))
	for _, c := range inits {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return fmt.Sprintf("restore init hook %s: %v", c.Name, err)
		}
		added = append(added, m)
	}
	if err := unstructured.SetNestedSlice(obj.Object, append(added, existing...), "spec", "initContainers"); err != nil {
		return fmt.Sprintf("restore init hook: %v", err)
	}
	return ""
}
