package flowtest

import (
	"context"

	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// fakeDeleteActivities stand in for the store's deletion activities.
type fakeDeleteActivities struct{}

func (fakeDeleteActivities) Delete(context.Context, v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
	return nil, nil
}

func (fakeDeleteActivities) CheckDeletable(context.Context, v1alpha1.DeleteBackupRequest) error {
	return nil
}

// DeleteActions stands in for extensions with nothing to delete.
func (fakeDeleteActivities) DeleteActions(context.Context, v1alpha1.DeleteActionsInput) (*v1alpha1.DeleteActionsResult, error) {
	return &v1alpha1.DeleteActionsResult{}, nil
}

func (fakeDeleteActivities) ListExpired(context.Context, v1alpha1.ExpireBackupsRequest) ([]string, error) {
	return nil, nil
}

// RegisterDeletionFakes registers fakes of the activities a deletion and
// an expiry run, but for the volumes' (RegisterVolumeFakes).
func RegisterDeletionFakes(env *testsuite.TestWorkflowEnvironment) {
	f := fakeDeleteActivities{}
	Fake(env, storeActs.CheckBackupDeletable, f.CheckDeletable)
	Fake(env, storeActs.RunDeleteActions, f.DeleteActions)
	Fake(env, storeActs.DeleteBackupData, f.Delete)
	Fake(env, storeActs.ListExpiredBackups, f.ListExpired)
	Fake(env, storeActs.ListExpiredEtcdSnapshots, f.ListExpired)
}
