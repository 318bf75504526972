package restore

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/cairn-backup/cairn/internal/kube"
)

// ownerResolver finds the owners of restored objects in the target
// cluster, where they have new UIDs.
type ownerResolver struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	mu     sync.Mutex
	found  map[string]types.UID
	reset  bool // discovery was refreshed once already
}

func newOwnerResolver(c *kube.Clients) *ownerResolver {
	return &ownerResolver{
		dyn:    c.Dynamic,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Discovery)),
		found:  map[string]types.UID{},
	}
}

// resolve rewrites obj's owner references to the owners' UIDs in the
// target cluster. A reference whose owner is restored in this run but
// does not exist yet is removed and returned, for the relink step; one
// whose owner is gone for good is dropped, as the garbage collector would
// otherwise delete obj.
func (r *ownerResolver) resolve(ctx context.Context, obj *unstructured.Unstructured, restoredOwners []string) (deferred []metav1.OwnerReference, err error) {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil, nil
	}
	restored := map[string]bool{}
	for _, uid := range restoredOwners {
		restored[uid] = true
	}
	kept := refs[:0]
	for _, ref := range refs {
		found, err := r.lookup(ctx, ref, obj.GetNamespace())
		if err != nil {
			return nil, err
		}
		switch {
		case found != nil:
			kept = append(kept, *found)
		case restored[string(ref.UID)]:
			deferred = append(deferred, ref)
		}
	}
	if len(kept) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "ownerReferences")
	} else {
		obj.SetOwnerReferences(kept)
	}
	return deferred, nil
}

// mapKind finds the resource of a kind at any version the cluster serves
// (an owner reference may name one it no longer does: the owner's UID is
// what matters). A miss refreshes discovery once, for CRDs restored since.
func (r *ownerResolver) mapKind(gk schema.GroupKind) (*meta.RESTMapping, error) {
	mapping, err := r.mapper.RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		r.mu.Lock()
		if !r.reset {
			r.reset = true
			r.mapper.Reset()
		}
		r.mu.Unlock()
		mapping, err = r.mapper.RESTMapping(gk)
	}
	return mapping, err
}

// lookup returns ref pointed at its owner in the target cluster (its UID,
// and an API version the cluster serves), or nil when the owner does not
// exist. Only an unreachable API server is an error.
func (r *ownerResolver) lookup(ctx context.Context, ref metav1.OwnerReference, namespace string) (*metav1.OwnerReference, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil
	}
	mapping, err := r.mapKind(gv.WithKind(ref.Kind).GroupKind())
	if err != nil {
		if kube.IsUnreachable(err) {
			return nil, fmt.Errorf("map owner kind %s: %w", ref.Kind, err)
		}
		return nil, nil // the kind is not served: the owner cannot exist
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	key := mapping.Resource.String() + "/" + namespace + "/" + ref.Name
	r.mu.Lock()
	uid, ok := r.found[key]
	r.mu.Unlock()
	if !ok {
		owner, err := r.dyn.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil && kube.IsUnreachable(err):
			return nil, fmt.Errorf("get owner %s %s: %w", ref.Kind, ref.Name, err)
		case err != nil:
			return nil, nil
		}
		uid = owner.GetUID()
		r.mu.Lock()
		r.found[key] = uid
		r.mu.Unlock()
	}
	ref.UID, ref.APIVersion = uid, mapping.GroupVersionKind.GroupVersion().String()
	return &ref, nil
}
