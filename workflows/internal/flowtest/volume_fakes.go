package flowtest

import (
	"context"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// fakeVolumeActivities stand in for the CSI activities; without an
// OnActivity mock a backup plans no volumes.
type fakeVolumeActivities struct{}

func (fakeVolumeActivities) Plan(context.Context, v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
	return &v1alpha1.PlanVolumesResult{}, nil
}

func (fakeVolumeActivities) Create(context.Context, v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
	return nil, nil
}

func (fakeVolumeActivities) Wait(context.Context, v1alpha1.WaitSnapshotInput) (*v1alpha1.SnapshotInfo, error) {
	return nil, nil
}

func (fakeVolumeActivities) Remove(context.Context, v1alpha1.RemoveSnapshotInput) error { return nil }

func (fakeVolumeActivities) Collect(context.Context, v1alpha1.CollectSnapshotsInput) (*v1alpha1.CollectSnapshotsResult, error) {
	return &v1alpha1.CollectSnapshotsResult{}, nil
}

func (fakeVolumeActivities) Delete(context.Context, v1alpha1.DeleteSnapshotsInput) (*v1alpha1.DeleteSnapshotsResult, error) {
	return &v1alpha1.DeleteSnapshotsResult{}, nil
}

func (fakeVolumeActivities) Expose(context.Context, v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
	return &v1alpha1.ExposeResult{}, nil
}

func (fakeVolumeActivities) Diagnose(context.Context, v1alpha1.ExposeInput) (*v1alpha1.DiagnoseResult, error) {
	return &v1alpha1.DiagnoseResult{}, nil
}

// WatchStart finds every data mover running.
func (fakeVolumeActivities) WatchStart(context.Context, v1alpha1.ExposeInput) (*v1alpha1.StartWatchResult, error) {
	return &v1alpha1.StartWatchResult{Running: true}, nil
}

func (fakeVolumeActivities) Cleanup(context.Context, v1alpha1.ExposeInput) error { return nil }

func (fakeVolumeActivities) Upload(context.Context, v1alpha1.UploadVolumeInput) (*v1alpha1.DataUploadInfo, error) {
	return &v1alpha1.DataUploadInfo{}, nil
}

func (fakeVolumeActivities) EnsureRepository(context.Context, v1alpha1.EnsureRepositoryInput) error {
	return nil
}

func (fakeVolumeActivities) DeleteData(context.Context, v1alpha1.DeleteVolumeDataInput) (*v1alpha1.DeleteVolumeDataResult, error) {
	return &v1alpha1.DeleteVolumeDataResult{}, nil
}

func (fakeVolumeActivities) Place(context.Context, v1alpha1.ExposeInput) (*v1alpha1.Placement, error) {
	return &v1alpha1.Placement{Node: "n1", Limit: 1}, nil
}

func (fakeVolumeActivities) RequestSlot(context.Context, v1alpha1.SlotAsk) error { return nil }

func RegisterVolumeFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeActivities{}
	Fake(env, csiActs.PlanVolumes, f.Plan)
	Fake(env, csiActs.CreateVolumeSnapshot, f.Create)
	Fake(env, csiActs.WaitVolumeSnapshot, f.Wait)
	Fake(env, csiActs.RemoveVolumeSnapshot, f.Remove)
	Fake(env, csiActs.CollectVolumeSnapshots, f.Collect)
	Fake(env, csiActs.DeleteBackupSnapshots, f.Delete)
	Fake(env, exposeActs.ExposeVolume, f.Expose)
	Fake(env, exposeActs.DiagnoseExposure, f.Diagnose)
	Fake(env, exposeActs.WatchDataMoverStart, f.WatchStart)
	Fake(env, exposeActs.CleanupExposure, f.Cleanup)
	Fake(env, datamoverActs.UploadVolume, f.Upload)
	Fake(env, repositoryActs.EnsureRepository, f.EnsureRepository)
	Fake(env, repositoryActs.DeleteVolumeData, f.DeleteData)
	Fake(env, exposeActs.PlaceDataMover, f.Place)
	Fake(env, exposeActs.RequestDataMoverSlot, f.RequestSlot)
}
