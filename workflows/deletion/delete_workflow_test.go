package deletion

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func newDeleteEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterDeletionFakes(env)
	env.RegisterWorkflowWithOptions(DeleteBackupWorkflow, workflow.RegisterOptions{Name: v1alpha1.DeleteBackupWorkflowName})
	flowtest.RegisterVolumeFakes(env)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// TestExpireDeletesEachExpiredBackupOnce: every expired backup gets its
// own deletion; one that fails is reported, the others still go.
func TestExpireDeletesEachExpiredBackupOnce(t *testing.T) {
	env := newDeleteEnv(t)
	expired := []string{"a", "b", "c", "d", "e", "f"}
	page := v1alpha1.ExpireBackupsRequest{Location: "mem://", Limit: v1alpha1.DefaultExpirePage}
	env.OnActivity(storeActs.ListExpiredBackups, mock.Anything, page).Return(expired, nil).Once()
	etcdPage := page
	etcdPage.EtcdSnapshots = true
	etcdPage.Deleted, etcdPage.Failed = 5, 1
	env.OnActivity(storeActs.ListExpiredEtcdSnapshots, mock.Anything, etcdPage).Return([]string{"etcd-1"}, nil).Once()
	deleted := map[string]int{}
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
			deleted[req.Kind+":"+req.Backup]++
			assert.Equal(t, "expired", req.Reason)
			if req.Backup == "c" {
				return nil, errors.New("disk on fire")
			}
			return &v1alpha1.DeleteBackupResult{Backup: req.Backup, ObjectsDeleted: 4}, nil
		})

	env.ExecuteWorkflow(ExpireBackupsWorkflow, v1alpha1.ExpireBackupsRequest{Location: "mem://"})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.ExpireBackupsResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.ElementsMatch(t, []string{"a", "b", "d", "e", "f", "etcd/etcd-1"}, res.Deleted)
	assert.Equal(t, 6, res.DeletedTotal)
	assert.Equal(t, 1, res.FailedTotal)
	require.Len(t, res.Failed, 1)
	assert.Contains(t, res.Failed[0], "c: ")
	for _, name := range []string{"a", "b", "d", "e", "f"} {
		assert.Equal(t, 1, deleted[":"+name], name)
	}
	assert.Equal(t, 1, deleted["etcd-snapshot:etcd-1"], "an expired etcd snapshot is deleted as one")
	assert.GreaterOrEqual(t, deleted[":c"], 1)
}

// TestExpireGoesOnWithTheNextPageAsNew: a full page of expired backups is
// deleted, then the run continues as new with the counts so far, to list
// the next page; its history holds one page, not every expired backup.
func TestExpireGoesOnWithTheNextPageAsNew(t *testing.T) {
	env := newDeleteEnv(t)
	env.OnActivity(storeActs.ListExpiredBackups, mock.Anything, mock.Anything).Return([]string{"a", "b"}, nil).Once()
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(&v1alpha1.DeleteBackupResult{}, nil).Twice()

	env.ExecuteWorkflow(ExpireBackupsWorkflow, v1alpha1.ExpireBackupsRequest{Location: "mem://", Limit: 2, Deleted: 3})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next v1alpha1.ExpireBackupsRequest
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, v1alpha1.ExpireBackupsRequest{Location: "mem://", Limit: 2, After: "b", Deleted: 5}, next)
}

// TestExpireDoesNotComeBackToFailedDeletions: a full page whose deletions
// all fail is counted, and the next run lists the names after it, not
// the same page again.
func TestExpireDoesNotComeBackToFailedDeletions(t *testing.T) {
	env := newDeleteEnv(t)
	env.OnActivity(storeActs.ListExpiredBackups, mock.Anything, mock.Anything).Return([]string{"a", "b"}, nil).Once()
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(nil, errors.New("read-only location"))

	env.ExecuteWorkflow(ExpireBackupsWorkflow, v1alpha1.ExpireBackupsRequest{Location: "mem://", Limit: 2})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next v1alpha1.ExpireBackupsRequest
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	assert.Equal(t, v1alpha1.ExpireBackupsRequest{Location: "mem://", Limit: 2, After: "b", Failed: 2}, next)
}

// TestDeletingAnImmutableBackupTouchesNothing: a backup under object lock
// fails its deletion with the Immutable error before its snapshots, its
// volume data or its files are touched.
func TestDeletingAnImmutableBackupTouchesNothing(t *testing.T) {
	env := newDeleteEnv(t)
	env.OnActivity(storeActs.CheckBackupDeletable, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("backup b is immutable until tomorrow", v1alpha1.ErrTypeImmutable, nil)).Once()
	touched := 0
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name != workflows.ActivityName(storeActs.CheckBackupDeletable) {
			touched++
		}
	})

	env.ExecuteWorkflow(DeleteBackupWorkflow, v1alpha1.DeleteBackupRequest{Backup: "b", Location: "mem://"})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	assert.Equal(t, v1alpha1.ErrTypeImmutable, appErr.Type())
	assert.Zero(t, touched, "no deletion step ran")
}

// TestDeleteKeepsTheBackupWhenAnExtensionCannotDelete: the extensions
// delete for the backup's items before anything of it goes; when one
// cannot, the deletion fails with its message and neither the snapshots,
// the volume data nor the backup's files are touched.
func TestDeleteKeepsTheBackupWhenAnExtensionCannotDelete(t *testing.T) {
	env := newDeleteEnv(t)
	env.OnActivity(storeActs.RunDeleteActions, mock.Anything, mock.MatchedBy(func(in v1alpha1.DeleteActionsInput) bool {
		return in.Backup == "b1" && in.Deletion != ""
	})).Return(nil, temporal.NewNonRetryableApplicationError("extensions could not delete for 1 items of backup b1, which is kept",
		v1alpha1.ErrTypeExtension, nil)).Once()
	touched := 0
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		switch info.ActivityType.Name {
		case workflows.ActivityName(csiActs.DeleteBackupSnapshots), workflows.ActivityName(repositoryActs.DeleteVolumeData),
			workflows.ActivityName(storeActs.DeleteBackupData):
			touched++
		}
	})

	env.ExecuteWorkflow(DeleteBackupWorkflow, v1alpha1.DeleteBackupRequest{Backup: "b1", Location: "mem://", Reason: "requested"})
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "which is kept")
	assert.Zero(t, touched, "nothing of the backup is deleted")
}
