package csi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/internal/specdoc"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
	"github.com/cairn-backup/cairn/workflows"
)

// volumePolicies loads the backup's volume policies, from its spec or
// from a ConfigMap in the worker's namespace; nil when it has none. A
// document that is missing or invalid fails the backup before anything
// is snapshotted.
func (a *Activities) volumePolicies(ctx context.Context, spec workflows.BackupSpec) (*volumepolicy.Policies, error) {
	return specdoc.Load(ctx, a.Dynamic, a.ConfigNamespace, "volumePolicies", spec.VolumePolicies, volumepolicy.Parse)
}

// policyLeavesOut says why the policies leave a claim's volume out of the
// backup, "" when they snapshot it (or none matches). cairn cannot back
// up a volume from its pod's file system yet: fs-backup leaves it out
// too, with a reason that says so, and is not an error.
func (a *Activities) policyLeavesOut(ctx context.Context, policies *volumepolicy.Policies, c corev1.PersistentVolumeClaim) (string, error) {
	if policies == nil {
		return "", nil
	}
	v := volumepolicy.Volume{ClaimLabels: c.Labels, ClaimPhase: string(c.Status.Phase)}
	if c.Spec.StorageClassName != nil {
		v.StorageClass = *c.Spec.StorageClassName
	}
	if size, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = &size
	}
	if c.Spec.VolumeName != "" {
		pv, err := a.Kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", fmt.Errorf("get persistentvolume %s: %w", c.Spec.VolumeName, err)
		default:
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
	}
	action, ok := policies.Match(v)
	key := c.Namespace + "/" + c.Name
	switch {
	case !ok || action.Type == volumepolicy.Snapshot:
		return "", nil
	case action.Type == volumepolicy.FSBackup:
		return fmt.Sprintf("claim %s: %s asks for fs-backup, which cairn cannot do yet: its volume is not backed up", key, action.Policy), nil
	default:
		return fmt.Sprintf("claim %s: skipped by %s: its volume is not backed up", key, action.Policy), nil
	}
}
