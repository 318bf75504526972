package workflows

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// fakeVolumeActivities stand in for the CSI activities; without an
// OnActivity mock a backup plans no volumes.
type fakeVolumeActivities struct{}

func (fakeVolumeActivities) Plan(context.Context, PlanVolumesInput) (*PlanVolumesResult, error) {
	return &PlanVolumesResult{}, nil
}
func (fakeVolumeActivities) Create(context.Context, CreateSnapshotInput) (*CreateSnapshotResult, error) {
	return nil, nil
}
func (fakeVolumeActivities) Wait(context.Context, WaitSnapshotInput) (*SnapshotInfo, error) {
	return nil, nil
}
func (fakeVolumeActivities) Remove(context.Context, RemoveSnapshotInput) error { return nil }
func (fakeVolumeActivities) Collect(context.Context, CollectSnapshotsInput) (*CollectSnapshotsResult, error) {
	return &CollectSnapshotsResult{}, nil
}
func (fakeVolumeActivities) Delete(context.Context, DeleteSnapshotsInput) (*DeleteSnapshotsResult, error) {
	return &DeleteSnapshotsResult{}, nil
}

func (fakeVolumeActivities) Expose(context.Context, ExposeInput) (*ExposeResult, error) {
	return &ExposeResult{}, nil
}
func (fakeVolumeActivities) Diagnose(context.Context, ExposeInput) (*DiagnoseResult, error) {
	return &DiagnoseResult{}, nil
}
func (fakeVolumeActivities) Cleanup(context.Context, ExposeInput) error { return nil }
func (fakeVolumeActivities) Upload(context.Context, UploadVolumeInput) (*DataUploadInfo, error) {
	return &DataUploadInfo{}, nil
}
func (fakeVolumeActivities) DeleteData(context.Context, DeleteVolumeDataInput) (*DeleteVolumeDataResult, error) {
	return &DeleteVolumeDataResult{}, nil
}

func (fakeVolumeActivities) Place(context.Context, ExposeInput) (*Placement, error) {
	return &Placement{Node: "n1", Limit: 1}, nil
}
func (fakeVolumeActivities) RequestSlot(context.Context, SlotAsk) error { return nil }

func registerVolumeFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeVolumeActivities{}
	env.RegisterActivityWithOptions(f.Plan, activity.RegisterOptions{Name: PlanVolumesActivity})
	env.RegisterActivityWithOptions(f.Create, activity.RegisterOptions{Name: CreateVolumeSnapshotActivity})
	env.RegisterActivityWithOptions(f.Wait, activity.RegisterOptions{Name: WaitVolumeSnapshotActivity})
	env.RegisterActivityWithOptions(f.Remove, activity.RegisterOptions{Name: RemoveVolumeSnapshotActivity})
	env.RegisterActivityWithOptions(f.Collect, activity.RegisterOptions{Name: CollectVolumeSnapshotsActivity})
	env.RegisterActivityWithOptions(f.Delete, activity.RegisterOptions{Name: DeleteBackupSnapshotsActivity})
	env.RegisterActivityWithOptions(f.Expose, activity.RegisterOptions{Name: ExposeVolumeActivity})
	env.RegisterActivityWithOptions(f.Diagnose, activity.RegisterOptions{Name: DiagnoseExposeActivity})
	env.RegisterActivityWithOptions(f.Cleanup, activity.RegisterOptions{Name: CleanupExposeActivity})
	env.RegisterActivityWithOptions(f.Upload, activity.RegisterOptions{Name: UploadVolumeActivity})
	env.RegisterActivityWithOptions(f.DeleteData, activity.RegisterOptions{Name: DeleteVolumeDataActivity})
	env.RegisterActivityWithOptions(f.Place, activity.RegisterOptions{Name: PlaceDataMoverActivity})
	env.RegisterActivityWithOptions(f.RequestSlot, activity.RegisterOptions{Name: RequestDataMoverSlotActivity})
	env.RegisterWorkflowWithOptions(VolumeSnapshotWorkflow, workflow.RegisterOptions{Name: VolumeSnapshotWorkflowName})
}
