package backup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// TestANewBackupAsksForOneVersionAndPublishesItsStartOnce: a run that
// starts today asks Temporal for the baseline's version alone, not for
// each change it stands for (a marker and an upsert each in its
// history), and publishes InProgress as its first phase, in one upsert
// with its kind and name. The runs from before the baseline replay from
// their recorded histories (TestReplayRecordedHistories).
func TestANewBackupAsksForOneVersionAndPublishesItsStartOnce(t *testing.T) {
	env := newBackupEnv(t)
	env.RegisterWorkflowWithOptions(BackupWorkflow, workflow.RegisterOptions{Name: v1alpha1.BackupWorkflowName})
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(10)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Once()
	counted := flowtest.NewHistoryEvents()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{counted}})

	env.ExecuteWorkflow(v1alpha1.BackupWorkflowName, testRequest())
	require.NoError(t, env.GetWorkflowError())
	runs := counted.OfType(v1alpha1.BackupWorkflowName)
	require.Len(t, runs, 1)
	assert.Equal(t, 1, runs[0].Versions, "change IDs asked for")
	// Kind, name and InProgress; Finalizing; Completed.
	assert.Equal(t, 3, runs[0].Upserts, "search-attribute upserts")
}
