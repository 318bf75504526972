package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// tenancy decides whom a resource's run acts as. A resource in cairn's own
// namespace acts as the worker: only operators may write there, and
// cluster-wide runs live there. Anywhere else a resource acts as its
// creator, whom cairn's admission webhook records; until one is recorded
// the controller refuses it rather than let a namespace's users borrow
// the worker's rights.
type tenancy struct {
	namespace string
}

// actingAs returns the identity obj's run acts as (nil: the worker), or
// why it may not run.
func (t tenancy) actingAs(obj metav1.Object) (*v1alpha1.Identity, string) {
	if obj.GetNamespace() == t.namespace {
		return nil, ""
	}
	return nil, fmt.Sprintf("refused: outside namespace %s a resource acts as its creator, "+
		"whom cairn's admission webhook records, and none is recorded; create it in %s, or use the starter API",
		t.namespace, t.namespace)
}
