package flowtest

import (
	"context"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func RestoredData() v1alpha1.RestoreVolume {
	return v1alpha1.RestoreVolume{ID: v1alpha1.VolumeRestoreID("shop", "data"), Namespace: "shop", Claim: "data", SnapshotID: "k1",
		StorageClass: "fast", AccessModes: []string{"ReadWriteMany"}, SizeBytes: 1 << 30}
}

// fakeVolumeRestoreActivities stand in for a volume restore's activities.
type fakeVolumeRestoreActivities struct{}

func (fakeVolumeRestoreActivities) RestoreData(context.Context, v1alpha1.RestoreVolumeDataInput) (*v1alpha1.DataDownloadInfo, error) {
	return &v1alpha1.DataDownloadInfo{}, nil
}

func (fakeVolumeRestoreActivities) HandOver(context.Context, v1alpha1.ExposeInput) (*v1alpha1.HandOverResult, error) {
	return &v1alpha1.HandOverResult{}, nil
}

func (fakeVolumeRestoreActivities) Finish(context.Context, v1alpha1.FinishVolumeRestoresInput) (*v1alpha1.FinishVolumeRestoresResult, error) {
	return &v1alpha1.FinishVolumeRestoresResult{}, nil
}

func RegisterVolumeRestoreFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeRestoreActivities{}
	Fake(env, datamoverActs.RestoreVolumeData, f.RestoreData)
	Fake(env, exposeActs.HandOverVolume, f.HandOver)
	Fake(env, exposeActs.FinishVolumeRestores, f.Finish)
}

// WithClaims is a plan of a namespace and its claims, with volumes
// restored from the repository.
func WithClaims(vols ...v1alpha1.RestoreVolume) *v1alpha1.RestorePlanResult {
	return &v1alpha1.RestorePlanResult{BackupFormat: v1alpha1.BackupFormatCairn, ItemsTotal: 1 + len(vols), Volumes: vols, Types: []v1alpha1.RestoreType{
		{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "namespaces"}, Items: 1, Batches: 1},
		{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}, Items: len(vols), Batches: 1},
	}}
}
