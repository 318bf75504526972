package flowtest

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TwoVolumes() *v1alpha1.PlanVolumesResult {
	return &v1alpha1.PlanVolumesResult{Volumes: []v1alpha1.Volume{
		{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1", Driver: "d", VolumeHandle: "h1", SnapshotClass: "c"},
		{Namespace: "shop", Claim: "logs", PersistentVolume: "pv-2", Driver: "d", VolumeHandle: "h2", SnapshotClass: "c"},
	}, Warnings: 1}
}

func ReadyInfo(_ context.Context, in v1alpha1.WaitSnapshotInput) (*v1alpha1.SnapshotInfo, error) {
	return &v1alpha1.SnapshotInfo{Name: in.Name, Content: "content-" + in.Volume.Claim, Handle: "snap-" + in.Volume.Claim, RestoreBytes: 1 << 20}, nil
}
