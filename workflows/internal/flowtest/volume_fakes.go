package flowtest

import (
	"context"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/workflows"
)

// fakeVolumeActivities stand in for the CSI activities; without an
// OnActivity mock a backup plans no volumes.
type fakeVolumeActivities struct{}

func (fakeVolumeActivities) Plan(context.Context, workflows.PlanVolumesInput) (*workflows.PlanVolumesResult, error) {
	return &workflows.PlanVolumesResult{}, nil
}

func (fakeVolumeActivities) Create(context.Context, workflows.CreateSnapshotInput) (*workflows.CreateSnapshotResult, error) {
	return nil, nil
}

func (fakeVolumeActivities) Wait(context.Context, workflows.WaitSnapshotInput) (*workflows.SnapshotInfo, error) {
	return nil, nil
}

func (fakeVolumeActivities) Remove(context.Context, workflows.RemoveSnapshotInput) error { return nil }

func (fakeVolumeActivities) Collect(context.Context, workflows.CollectSnapshotsInput) (*workflows.CollectSnapshotsResult, error) {
	return &workflows.CollectSnapshotsResult{}, nil
}

func (fakeVolumeActivities) Delete(context.Context, workflows.DeleteSnapshotsInput) (*workflows.DeleteSnapshotsResult, error) {
	return &workflows.DeleteSnapshotsResult{}, nil
}

func (fakeVolumeActivities) Expose(context.Context, workflows.ExposeInput) (*workflows.ExposeResult, error) {
	return &workflows.ExposeResult{}, nil
}

func (fakeVolumeActivities) Diagnose(context.Context, workflows.ExposeInput) (*workflows.DiagnoseResult, error) {
	return &workflows.DiagnoseResult{}, nil
}

func (fakeVolumeActivities) Cleanup(context.Context, workflows.ExposeInput) error { return nil }

func (fakeVolumeActivities) Upload(context.Context, workflows.UploadVolumeInput) (*workflows.DataUploadInfo, error) {
	return &workflows.DataUploadInfo{}, nil
}

func (fakeVolumeActivities) EnsureRepository(context.Context, workflows.EnsureRepositoryInput) error {
	return nil
}

func (fakeVolumeActivities) DeleteData(context.Context, workflows.DeleteVolumeDataInput) (*workflows.DeleteVolumeDataResult, error) {
	return &workflows.DeleteVolumeDataResult{}, nil
}

func (fakeVolumeActivities) Place(context.Context, workflows.ExposeInput) (*workflows.Placement, error) {
	return &workflows.Placement{Node: "n1", Limit: 1}, nil
}

func (fakeVolumeActivities) RequestSlot(context.Context, workflows.SlotAsk) error { return nil }

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
	Fake(env, exposeActs.CleanupExposure, f.Cleanup)
	Fake(env, datamoverActs.UploadVolume, f.Upload)
	Fake(env, repositoryActs.EnsureRepository, f.EnsureRepository)
	Fake(env, repositoryActs.DeleteVolumeData, f.DeleteData)
	Fake(env, exposeActs.PlaceDataMover, f.Place)
	Fake(env, exposeActs.RequestDataMoverSlot, f.RequestSlot)
}
