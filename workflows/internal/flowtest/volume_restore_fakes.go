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

func (fakeVolumeRestoreActivities) AwaitPod(_ context.Context, in v1alpha1.AwaitRestoredPodInput) (*v1alpha1.PodVolume, error) {
	return &v1alpha1.PodVolume{Pod: in.Pod, Volume: in.Volume, UID: "uid-1", Node: "n1", Dir: "volumes/kubernetes.io~empty-dir/" + in.Volume}, nil
}

func (fakeVolumeRestoreActivities) Mark(context.Context, v1alpha1.MarkPodVolumeInput) error {
	return nil
}

// RestoredPodVolume is the copy of emptyDir cache of pod shop/web.
func RestoredPodVolume() v1alpha1.RestoreVolume {
	return v1alpha1.RestoreVolume{ID: v1alpha1.PodVolumeRestoreID("shop", "web", "cache"), Namespace: "shop", SnapshotID: "k2",
		PodVolume: &v1alpha1.PodVolume{Pod: "web", Volume: "cache", Source: "emptyDir"}, DataName: "web/cache"}
}

func (fakeVolumeRestoreActivities) Finish(context.Context, v1alpha1.FinishVolumeRestoresInput) (*v1alpha1.FinishVolumeRestoresResult, error) {
	return &v1alpha1.FinishVolumeRestoresResult{}, nil
}

func RegisterVolumeRestoreFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeRestoreActivities{}
	Fake(env, datamoverActs.RestoreVolumeData, f.RestoreData)
	Fake(env, exposeActs.HandOverVolume, f.HandOver)
	Fake(env, exposeActs.FinishVolumeRestores, f.Finish)
	Fake(env, exposeActs.AwaitRestoredPod, f.AwaitPod)
	Fake(env, datamoverActs.MarkPodVolume, f.Mark)
}

// WithClaims is a plan of a namespace and its claims, with volumes
// restored from the repository.
func WithClaims(vols ...v1alpha1.RestoreVolume) *v1alpha1.RestorePlanResult {
	return &v1alpha1.RestorePlanResult{BackupFormat: v1alpha1.BackupFormatCairn, ItemsTotal: 1 + len(vols), Volumes: vols, Types: []v1alpha1.RestoreType{
		{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "namespaces"}, Items: 1, Batches: 1},
		{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}, Items: len(vols), Batches: 1},
	}}
}
