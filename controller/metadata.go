package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchMetadata applies change to obj's finalizers or annotations and
// writes only what changed, as a merge patch. An update would send the
// whole spec back as Go serializes it ("72h" becomes "72h0m0s", an absent
// name becomes ""), which a Backup's rule that its spec cannot change
// refuses, and which would make the controller an owner of fields a
// GitOps tool applied.
func patchMetadata(ctx context.Context, kube client.Client, obj client.Object, change func()) error {
	before := obj.DeepCopyObject().(client.Object)
	change()
	return kube.Patch(ctx, obj, client.MergeFrom(before))
}
