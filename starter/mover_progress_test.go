package starter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func heartbeatOf(t *testing.T, details any) *commonpb.Payloads {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(details)
	require.NoError(t, err)
	return p
}

// A volume's progress comes from its pending activity's heartbeat: the
// data mover's counters with the sentence they read as.
func TestMoverProgressIsReadFromTheHeartbeat(t *testing.T) {
	beat := map[string]any{"hashedBytes": 1 << 30, "progress": "uploading: 1.0 GiB of 2.0 GiB (50%), 1.0 GiB sent"}
	desc := &workflowservice.DescribeWorkflowExecutionResponse{PendingActivities: []*workflowpb.PendingActivityInfo{
		{}, // an activity that has not heartbeated yet
		{HeartbeatDetails: heartbeatOf(t, beat)},
	}}
	p, ok := moverProgressOf(desc)
	require.True(t, ok)
	assert.Equal(t, "uploading: 1.0 GiB of 2.0 GiB (50%), 1.0 GiB sent", p)

	_, ok = moverProgressOf(&workflowservice.DescribeWorkflowExecutionResponse{PendingActivities: []*workflowpb.PendingActivityInfo{
		{HeartbeatDetails: heartbeatOf(t, map[string]any{"page": 3})}, // another activity's details
	}})
	assert.False(t, ok)
}

// Only the operations whose data is still moving are read.
func TestMovingOperationsAreTheUploadsInProgress(t *testing.T) {
	s := &v1alpha1.BackupStatus{Operations: []v1alpha1.Operation{
		{ID: "a", Kind: v1alpha1.OperationKindDataUpload, Phase: v1alpha1.OperationInProgress, WorkflowID: "volume/a"},
		{ID: "b", Kind: v1alpha1.OperationKindDataUpload, Phase: v1alpha1.OperationCompleted, WorkflowID: "volume/b"},
		{ID: "c", Kind: v1alpha1.OperationKindCSISnapshot, Phase: v1alpha1.OperationInProgress, WorkflowID: "volume/c"},
		{ID: "d", Kind: v1alpha1.OperationKindPodVolumeBackup, Phase: v1alpha1.OperationInProgress, WorkflowID: "podvolume/d"},
	}}
	moving := movingOperations(s)
	require.Len(t, moving, 2)
	assert.Equal(t, "volume/a", moving[0].workflowID)
	assert.Equal(t, "podvolume/d", moving[1].workflowID, "a pod volume's copy moves data too")
	*moving[0].progress = "uploading"
	assert.Equal(t, "uploading", s.Operations[0].Progress, "the progress lands in the status")
}

// A describe lists the steps that failed and wait for another attempt,
// with their last error; a first attempt still running is not one.
func TestRetryingStepsAreThePendingActivitiesThatFailed(t *testing.T) {
	desc := &workflowservice.DescribeWorkflowExecutionResponse{PendingActivities: []*workflowpb.PendingActivityInfo{
		{ActivityType: &commonpb.ActivityType{Name: "CollectResources"}, Attempt: 1},
		{ActivityType: &commonpb.ActivityType{Name: "FinalizeBackup"}, Attempt: 3, MaximumAttempts: 25,
			LastFailure: &failurepb.Failure{Message: "write backups/b1/backup.json: permission denied"}},
	}}
	assert.Equal(t, []RetryingStep{{Step: "FinalizeBackup", Attempt: 3, MaxAttempts: 25,
		LastError: "write backups/b1/backup.json: permission denied"}}, retryingSteps(desc))
}
