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
// when it has none) out of its snapshots, "" when they snapshot it (or
// none matches). A volume a policy gives to fs-backup is copied from a
// pod that mounts it instead; the reason says what happens when none
// does.
func policyLeavesOut(policies *volumepolicy.Policies, c corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) string {
	if policies == nil {
		return ""
	}
	action, ok := policies.Match(policyVolume(c, pv))
	key := c.Namespace + "/" + c.Name
	switch {
	case !ok || action.Type == volumepolicy.Snapshot:
		return ""
	case action.Type == volumepolicy.FSBackup:
		return fmt.Sprintf("claim %s: %s asks for fs-backup, but no running pod of the backup mounts it: its volume is not backed up", key, action.Policy)
	default:
		return fmt.Sprintf("claim %s: skipped by %s: its volume is not backed up", key, action.Policy)
	}
}

// policyVolume is what the policies' conditions read of a claim and its
// bound volume (nil when it has none).
func policyVolume(c corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) volumepolicy.Volume {
	v := volumepolicy.Volume{ClaimLabels: c.Labels, ClaimPhase: string(c.Status.Phase)}
	if c.Spec.StorageClassName != nil {
		v.StorageClass = *c.Spec.StorageClassName
	}
	if size, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = &size
	}
	if pv == nil {
		return v
	}
	if size, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = &size
	}
	if v.StorageClass == "" {
		v.StorageClass = pv.Spec.StorageClassName
	}
	switch src := pv.Spec.PersistentVolumeSource; {
	case src.CSI != nil:
		v.CSIDriver, v.VolumeAttributes, v.Type = src.CSI.Driver, src.CSI.VolumeAttributes, "csi"
	case src.NFS != nil:
		v.NFSServer, v.NFSPath, v.Type = src.NFS.Server, src.NFS.Path, "nfs"
	case src.Local != nil:
		v.Type = "local"
	case src.HostPath != nil:
		v.Type = "hostPath"
	}
	return v
}
