package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func fakeBackup(workflow.Context, BackupRequest) (*BackupStatus, error) { return nil, nil }

func fakeListRuns(context.Context, ScheduleRunsInput) (*ScheduleRunsResult, error) { return nil, nil }

func newScheduledEnv(t *testing.T, due time.Time) *testsuite.TestWorkflowEnvironment {
	env := newDeleteEnv(t)
	env.RegisterWorkflowWithOptions(fakeBackup, workflow.RegisterOptions{Name: BackupWorkflowName})
	env.RegisterActivityWithOptions(fakeListRuns, activity.RegisterOptions{Name: ListScheduleRunsActivity})
	env.SetStartTime(due.Add(2 * time.Second))
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(scheduledStartTime.ValueSet(due))))
	return env
}

// TestScheduledRunNamesBackupAndAppliesRetention: the run's backup is
// named after its due time and carries the schedule; afterwards the runs
// beyond keepLast are deleted, each by its own deletion.
func TestScheduledRunNamesBackupAndAppliesRetention(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := validSchedule()
	spec.Retention = RetentionPolicy{KeepLast: intp(2)}

	var started BackupRequest
	env.OnWorkflow(BackupWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, req BackupRequest) (*BackupStatus, error) {
			started = req
			assert.Equal(t, BackupWorkflowID("nightly-20261122020000"), workflow.GetInfo(ctx).WorkflowExecution.ID)
			return &BackupStatus{Name: req.Spec.Name, Phase: PhaseCompleted}, nil
		}).Once()
	old := runs("CCCF", 100)
	for i := range old {
		old[i].Time = old[i].Time.Add(due.Sub(retentionNow)) // hours before due
		old[i].Name = ScheduledBackupName("nightly", old[i].Time)
	}
	listed := append(old, ScheduleRun{Name: "nightly-20261122020000", Phase: PhaseCompleted, Time: due.Add(time.Minute)})
	env.OnActivity(ListScheduleRunsActivity, mock.Anything, ScheduleRunsInput{Schedule: spec}).
		Return(&ScheduleRunsResult{Runs: listed, Interval: 24 * time.Hour}, nil).Once()
	var deleted []string
	env.OnActivity(DeleteBackupDataActivity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req DeleteBackupRequest) (*DeleteBackupResult, error) {
			assert.Equal(t, "retention", req.Reason)
			assert.Equal(t, spec.Template.StorageLocation, req.Location)
			deleted = append(deleted, req.Backup)
			return &DeleteBackupResult{Backup: req.Backup}, nil
		})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, "nightly-20261122020000", started.Spec.Name)
	assert.Equal(t, "nightly", started.Spec.Schedule)
	assert.Equal(t, spec.Template.StorageLocation, started.Spec.StorageLocation)
	assert.Equal(t, PhaseCompleted, res.Phase)
	// Keep the new run and the newest old completed one; the newest
	// failed run stays (keepFailed 1).
	assert.ElementsMatch(t, []string{old[0].Name, old[1].Name}, deleted)
	assert.ElementsMatch(t, deleted, res.Deleted)
	assert.Equal(t, HealthHealthy, res.Health.State)
}

// TestScheduledRunTooLongIsDegraded: a backup outlasting maxRunDuration
// marks the run Degraded, and it stays so after the backup ends.
func TestScheduledRunTooLongIsDegraded(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := validSchedule()
	spec.MaxRunDuration = dur(time.Hour)

	env.OnWorkflow(BackupWorkflowName, mock.Anything, mock.Anything).After(90*time.Minute).
		Return(&BackupStatus{Phase: PhaseCompleted}, nil).Once()
	env.OnActivity(ListScheduleRunsActivity, mock.Anything, mock.Anything).
		Return(&ScheduleRunsResult{Runs: []ScheduleRun{{Name: "nightly-20261122020000", Phase: PhaseCompleted, Time: due.Add(90 * time.Minute)}}, Interval: 24 * time.Hour}, nil).Once()
	var healthDuringRun string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStatus)
		require.NoError(t, err)
		var res ScheduledBackupResult
		require.NoError(t, v.Get(&res))
		healthDuringRun = res.Health.State
	}, 61*time.Minute)

	env.ExecuteWorkflow(ScheduledBackupWorkflow, ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, HealthDegraded, healthDuringRun)
	assert.Equal(t, HealthDegraded, res.Health.State)
	assert.Contains(t, res.Health.Reasons[0], "has run for more than maxRunDuration 1h0m0s")
}

// TestScheduledRunFailedBackupStillAppliesRetention: a failed backup
// fails the run, after retention ran.
func TestScheduledRunFailedBackupStillAppliesRetention(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := validSchedule()
	env.OnWorkflow(BackupWorkflowName, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("api server gone", ErrTypeClusterUnreachable, nil)).Once()
	env.OnActivity(ListScheduleRunsActivity, mock.Anything, mock.Anything).
		Return(&ScheduleRunsResult{Runs: nil, Interval: 24 * time.Hour}, nil).Once()

	env.ExecuteWorkflow(ScheduledBackupWorkflow, ScheduledBackupRequest{Schedule: spec})
	require.Error(t, env.GetWorkflowError())
	assert.Contains(t, env.GetWorkflowError().Error(), "api server gone")
}
