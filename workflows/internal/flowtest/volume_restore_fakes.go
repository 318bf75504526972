package flowtest

import (
	"context"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/workflows"
)

func RestoredData() workflows.RestoreVolume {
	return workflows.RestoreVolume{ID: workflows.VolumeRestoreID("shop", "data"), Namespace: "shop", Claim: "data", SnapshotID: "k1",
		StorageClass: "fast", AccessModes: []string{"ReadWriteMany"}, SizeBytes: 1 << 30}
}

// fakeVolumeRestoreActivities stand in for a volume restore's activities.
type fakeVolumeRestoreActivities struct{}

func (fakeVolumeRestoreActivities) RestoreData(context.Context, workflows.RestoreVolumeDataInput) (*workflows.DataDownloadInfo, error) {
	return &workflows.DataDownloadInfo{}, nil
}

func (fakeVolumeRestoreActivities) HandOver(context.Context, workflows.ExposeInput) (*workflows.HandOverResult, error) {
	return &workflows.HandOverResult{}, nil
}

func (fakeVolumeRestoreActivities) Finish(context.Context, workflows.FinishVolumeRestoresInput) (*workflows.FinishVolumeRestoresResult, error) {
	return &workflows.FinishVolumeRestoresResult{}, nil
}

func RegisterVolumeRestoreFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeRestoreActivities{}
	Fake(env, datamoverActs.RestoreVolumeData, f.RestoreData)
	Fake(env, exposeActs.HandOverVolume, f.HandOver)
	Fake(env, exposeActs.FinishVolumeRestores, f.Finish)
}

// WithClaims is a plan of a namespace and its claims, with volumes
// restored from the repository.
func WithClaims(vols ...workflows.RestoreVolume) *workflows.RestorePlanResult {
	return &workflows.RestorePlanResult{BackupFormat: workflows.BackupFormatCairn, ItemsTotal: 1 + len(vols), Volumes: vols, Types: []workflows.RestoreType{
		{ResourceType: workflows.ResourceType{Version: "v1", Resource: "namespaces"}, Items: 1, Batches: 1},
		{ResourceType: workflows.ResourceType{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}, Items: len(vols), Batches: 1},
	}}
}
