package restore

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/objects"
)

// ReasonExistsDiffers is why an item is skipped under policy none.
const ReasonExistsDiffers = "it already exists and differs from the backup (existingResourcePolicy none keeps it as it is)"

// ReasonRelatedExists is why a workload's related cluster-scoped object
// that exists and differs is skipped, whatever the policy.
const ReasonRelatedExists = "it already exists and differs from the backup; a cluster-scoped object restored for a namespace's workloads is never changed"

// ReasonUncheckedDryRun notes a dry run's item the API server could not
// check, because what holds it is created earlier in the same restore.
const ReasonUncheckedDryRun = "not checked by the API server: its namespace or its type's CRD is created by this restore"

// dryRun is the dryRun option of the applier's writes.
func (ap *applier) dryRun() []string {
	if ap.in.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// applier creates the items of one resource type.
type applier struct {
	in       v1alpha1.ApplyInput
	t        v1alpha1.RestoreType
	resource dynamic.NamespaceableResourceInterface
	clients  *kube.Clients
	owners   *ownerResolver
	// namespaceExists answers with the worker's rights whether a
	// namespace exists, for a caller who may neither create nor read it.
	namespaceExists func(ctx context.Context, name string) (bool, error)
}

func newApplier(c *kube.Clients, in v1alpha1.ApplyInput, t v1alpha1.RestoreType, owners *ownerResolver) *applier {
	gvr := schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
	in.Options = in.Options.WithDefaults()
	return &applier{in: in, t: t, resource: c.Dynamic.Resource(gvr), clients: c, owners: owners}
}

// apply restores one item and says what happened to it. Only an
// unreachable API server is an error (the batch is retried); anything the
// server answers is the item's outcome.
func (ap *applier) apply(ctx context.Context, item Item) (v1alpha1.ItemOutcome, []relink, error) {
	obj := &unstructured.Unstructured{Object: item.Object}
	out := v1alpha1.ItemOutcome{Resource: ap.t.GroupResource(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
		SourceNamespace: item.SourceNamespace, Modifiers: item.Modifiers}
	// The plan kept the status only for types whose status is restored. It
	// stays in the create body: a type without a status subresource stores
	// it there; one with the subresource ignores it and gets it below.
	status, hasStatus, _ := unstructured.NestedFieldCopy(obj.Object, "status")

	if cv, ok := ap.in.ClaimVolumes[obj.GetNamespace()+"/"+obj.GetName()]; ok && obj.GetKind() == "PersistentVolumeClaim" {
		if cv.Error != "" {
			out.Result, out.Reason = v1alpha1.ItemFailed, cv.Error
			return out, nil, nil
		}
		// The volume restored from the repository waits, pre-bound, for
		// this claim.
		_ = unstructured.SetNestedField(obj.Object, cv.PersistentVolume, "spec", "volumeName")
	}
	deferredRefs, err := ap.owners.resolve(ctx, obj, item.RestoredOwners)
	if err != nil {
		return out, nil, err
	}
	client := ap.client(obj.GetNamespace())
	// The server's answer to a create matters for the status restored
	// after it and for the owner references it kept, and to tell a dry
	// run's checked items.
	answer := ap.in.DryRun || (ap.t.RestoreStatus && hasStatus) || len(obj.GetOwnerReferences()) > 0
	result, action, reason, err := ap.createOrReconcile(ctx, client, obj, item, answer)
	if ap.in.DryRun && err == nil && reason == "" {
		// Nothing was written: no status to restore, no owner to relink.
		out.Result, out.Action = v1alpha1.ItemRestored, action
		if result == nil && action == v1alpha1.ActionCreated {
			out.Reason = ReasonUncheckedDryRun
		}
		return out, nil, nil
	}
	switch {
	case err != nil && kube.IsUnreachable(err):
		return out, nil, fmt.Errorf("%s %s: %w", out.Resource, obj.GetName(), err)
	case err != nil:
		out.Result, out.Reason = v1alpha1.ItemFailed, err.Error()
		return out, nil, nil
	case reason != "":
		out.Result, out.Reason = v1alpha1.ItemSkipped, reason
		return out, nil, nil
	}
	out.Result, out.Action = v1alpha1.ItemRestored, action
	if ap.t.RestoreStatus && hasStatus && action != v1alpha1.ActionUnchanged {
		msg, err := ap.restoreStatus(ctx, client, result, status)
		if err != nil {
			return out, nil, err
		}
		out.Reason = msg
	}
	// References the object does not carry yet: those waiting for their
	// owner, and, for an object an earlier attempt made, those whose
	// owner appeared since. The relink step adds them.
	missing := append([]metav1.OwnerReference(nil), deferredRefs...)
	if action == v1alpha1.ActionCreated && result != nil {
		missing = append(missing, refsMissingFrom(result, obj.GetOwnerReferences())...)
	}
	var relinks []relink
	for _, ref := range missing {
		relinks = append(relinks, relink{Type: ap.t.ResourceType, Namespace: obj.GetNamespace(), Name: obj.GetName(), Owner: ref})
	}
	return out, relinks, nil
}

// refsMissingFrom returns the references of want that obj does not have.
func refsMissingFrom(obj *unstructured.Unstructured, want []metav1.OwnerReference) []metav1.OwnerReference {
	have := map[types.UID]bool{}
	for _, r := range obj.GetOwnerReferences() {
		have[r.UID] = true
	}
	var missing []metav1.OwnerReference
	for _, r := range want {
		if !have[r.UID] {
			missing = append(missing, r)
		}
	}
	return missing
}

// createOrReconcile creates obj; when it exists already, the existing
// object is judged: restored by this very restore earlier (a resumed
// batch), identical, or different, which the policy decides. A non-empty
// reason means the item is skipped. Without answer, a created object is
// returned as obj itself: the server's answer is not decoded.
func (ap *applier) createOrReconcile(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	item Item, answer bool) (*unstructured.Unstructured, v1alpha1.ItemAction, string, error) {
	created, createErr := ap.create(ctx, client, obj, answer)
	switch {
	case createErr == nil:
		return created, v1alpha1.ActionCreated, "", nil
	case ap.in.DryRun && apierrors.IsNotFound(createErr):
		// Its namespace, or its type's CRD, is created by this restore:
		// the dry run did not create it, so the server cannot check more.
		return nil, v1alpha1.ActionCreated, "", nil
	}
	// Not only AlreadyExists means it exists: a Service that keeps its
	// node ports is refused for the port before the name is checked.
	existing, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsForbidden(createErr) && apierrors.IsForbidden(err) && ap.t.GroupResource() == "namespaces" {
		return ap.unreadableNamespace(ctx, obj, item, createErr)
	}
	switch {
	case err != nil && apierrors.IsAlreadyExists(createErr):
		return nil, "", "", fmt.Errorf("it exists, but reading it failed: %w", err)
	case err != nil:
		return nil, "", "", createErr
	}
	preserve := ap.in.PreserveNodePorts
	switch {
	case existing.GetLabels()[v1alpha1.LabelRestore] == obj.GetLabels()[v1alpha1.LabelRestore]:
		return existing, v1alpha1.ActionCreated, "", nil // an earlier attempt of this restore made it
	case item.EnsureOnly, objects.Equivalent(existing, obj, preserve):
		return existing, v1alpha1.ActionUnchanged, "", nil
	case item.CreateOnly:
		return nil, "", ReasonRelatedExists, nil
	case ap.in.Policy != v1alpha1.ExistingResourceUpdate:
		return nil, "", ReasonExistsDiffers, nil
	}
	patch, err := objects.UpdatePatch(existing, obj, preserve)
	if err != nil {
		return nil, "", "", err
	}
	updated, err := client.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{DryRun: ap.dryRun()})
	if err != nil {
		return nil, "", "", fmt.Errorf("it exists and differs from the backup; updating it failed: %w", err)
	}
	return updated, v1alpha1.ActionUpdated, "", nil
}

// unreadableNamespace judges a Namespace the restore's caller may neither
// create nor read: a team bound to roles inside its namespace restores
// into it without rights on the Namespace object. Only whether it exists
// is asked, with the worker's rights; it is never changed.
func (ap *applier) unreadableNamespace(ctx context.Context, obj *unstructured.Unstructured, item Item,
	createErr error) (*unstructured.Unstructured, v1alpha1.ItemAction, string, error) {
	if ap.namespaceExists == nil {
		return nil, "", "", createErr
	}
	exists, err := ap.namespaceExists(ctx, obj.GetName())
	switch {
	case err != nil:
		return nil, "", "", err
	case !exists:
		return nil, "", "", createErr
	case item.EnsureOnly:
		return nil, v1alpha1.ActionUnchanged, "", nil
	}
	return nil, "", "it exists, and the restore's caller may not read or change the Namespace object: " + createErr.Error(), nil
}

// restoreStatus writes the backed-up status through the status
// subresource when the object does not carry it yet; it returns a note
// when that was not possible.
func (ap *applier) restoreStatus(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured, status any) (string, error) {
	if have, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status"); equality.Semantic.DeepEqual(have, status) {
		return "", nil
	}
	obj = obj.DeepCopy()
	obj.Object["status"] = status
	_, err := client.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	switch {
	case err != nil && kube.IsUnreachable(err):
		return "", fmt.Errorf("restore status of %s: %w", obj.GetName(), err)
	case err != nil:
		return "restored without its status: " + err.Error(), nil
	}
	return "", nil
}

// create creates obj, decoding the server's answer only when asked to.
func (ap *applier) create(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	answer bool) (*unstructured.Unstructured, error) {
	if answer || !ap.clients.CanCreateRaw() {
		return client.Create(ctx, obj, metav1.CreateOptions{DryRun: ap.dryRun()})
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", obj.GetName(), err)
	}
	r := kube.Resource{GVR: schema.GroupVersionResource{Group: ap.t.Group, Version: ap.t.Version, Resource: ap.t.Resource},
		Namespaced: obj.GetNamespace() != ""}
	if _, err := ap.clients.CreateRaw(ctx, r, obj.GetNamespace(), body, ap.in.DryRun); err != nil {
		return nil, err
	}
	return obj, nil
}

func (ap *applier) client(namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return ap.resource
	}
	return ap.resource.Namespace(namespace)
}
