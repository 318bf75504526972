package flowtest

import (
	"context"

	"github.com/cairn-backup/cairn/workflows"
)

func TwoVolumes() *workflows.PlanVolumesResult {
	return &workflows.PlanVolumesResult{Volumes: []workflows.Volume{
		{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1", Driver: "d", VolumeHandle: "h1", SnapshotClass: "c"},
		{Namespace: "shop", Claim: "logs", PersistentVolume: "pv-2", Driver: "d", VolumeHandle: "h2", SnapshotClass: "c"},
	}, Warnings: 1}
}

func ReadyInfo(_ context.Context, in workflows.WaitSnapshotInput) (*workflows.SnapshotInfo, error) {
	return &workflows.SnapshotInfo{Name: in.Name, Content: "content-" + in.Volume.Claim, Handle: "snap-" + in.Volume.Claim, RestoreBytes: 1 << 20}, nil
}
