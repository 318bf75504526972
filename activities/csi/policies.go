package csi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/activities/internal/specdoc"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
)

// volumePolicies loads the backup's volume policies, from its spec or
// from a ConfigMap in the worker's namespace read with dyn (the run's
// caller's); nil when it has none. A
// document that is missing or invalid fails the backup before anything
// is snapshotted.
func (a *Activities) volumePolicies(ctx context.Context, dyn dynamic.Interface, spec v1alpha1.BackupSpec) (*volumepolicy.Policies, error) {
	return specdoc.Load(ctx, dyn, a.ConfigNamespace, "volumePolicies", spec.VolumePolicies, volumepolicy.Parse)
}

// policyLeavesOut says why the policies leave a claim's volume (pv, nil
// when it has none) out of the backup, "" when they snapshot it (or none
// matches). cairn cannot back up a volume from its pod's file system
// yet: fs-backup leaves it out too, with a reason that says so, and is
// not an error.
func policyLeavesOut(policies *volumepolicy.Policies, c corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) string {
	if policies == nil {
		return ""
	}
	v := volumepolicy.Volume{ClaimLabels: c.Labels, ClaimPhase: string(c.Status.Phase)}
	if c.Spec.StorageClassName != nil {
		v.StorageClass = *c.Spec.StorageClassName
	}
	if size, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = &size
	}
	if pv != nil {
		if size, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
			v.Capacity = &size
		}
		if v.StorageClass == "" {
			v.StorageClass = pv.Spec.StorageClassName
		}
		if csi := pv.Spec.CSI; csi != nil {
			v.CSIDriver, v.VolumeAttributes = csi.Driver, csi.VolumeAttributes
		}
		if nfs := pv.Spec.NFS; nfs != nil {
			v.NFSServer, v.NFSPath = nfs.Server, nfs.Path
		}
	}
	action, ok := policies.Match(v)
	key := c.Namespace + "/" + c.Name
	switch {
	case !ok || action.Type == volumepolicy.Snapshot:
		return ""
	case action.Type == volumepolicy.FSBackup:
		return fmt.Sprintf("claim %s: %s asks for fs-backup, which cairn cannot do yet: its volume is not backed up", key, action.Policy)
	default:
		return fmt.Sprintf("claim %s: skipped by %s: its volume is not backed up", key, action.Policy)
	}
}
