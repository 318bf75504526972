package schedule

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/deletion"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func fakeBackup(workflow.Context, workflows.BackupRequest) (*workflows.BackupStatus, error) {
	return nil, nil
}

func fakeListRuns(context.Context, workflows.ScheduleRunsInput) (*workflows.ScheduleRunsResult, error) {
	return nil, nil
}

// nightly is a valid schedule that keeps its last 7 runs.
func nightly() workflows.ScheduleSpec {
	return workflows.ScheduleSpec{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin",
		Retention: workflows.RetentionPolicy{KeepLast: ptr.To(7)}}.WithDefaults("file:///tmp/loc")
}

// runsBefore are earlier runs of nightly, one per phase, an hour apart,
// the last an hour before due.
func runsBefore(due time.Time, phases ...workflows.Phase) []workflows.ScheduleRun {
	var out []workflows.ScheduleRun
	for i, phase := range phases {
		at := due.Add(-time.Duration(len(phases)-i) * time.Hour)
		out = append(out, workflows.ScheduleRun{Name: workflows.ScheduledBackupName("nightly", at), Phase: phase, Time: at, Bytes: 100})
	}
	return out
}

// planRetention answers the retention's plan from listed, as the store
// would list it; a deletion removes its run from listed.
func planRetention(env *testsuite.TestWorkflowEnvironment, listed *workflows.ScheduleRunsResult) {
	env.OnActivity(storeActs.PlanRetention, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.RetentionPageInput) (*workflows.RetentionPage, error) {
			return workflows.PageRetention(*listed, in), nil
		})
}

func newScheduledEnv(t *testing.T, due time.Time) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterDeletionFakes(env)
	flowtest.RegisterVolumeFakes(env)
	env.RegisterWorkflowWithOptions(deletion.DeleteBackupWorkflow, workflow.RegisterOptions{Name: workflows.DeleteBackupWorkflowName})
	t.Cleanup(func() { env.AssertExpectations(t) })
	env.RegisterWorkflowWithOptions(fakeBackup, workflow.RegisterOptions{Name: workflows.BackupWorkflowName})
	flowtest.Fake(env, storeActs.ListScheduleRuns, fakeListRuns)
	env.RegisterWorkflowWithOptions(ApplyRetentionWorkflow, workflow.RegisterOptions{Name: workflows.ApplyRetentionWorkflowName})
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
	spec := nightly()
	spec.Retention = workflows.RetentionPolicy{KeepLast: ptr.To(2)}

	var started workflows.BackupRequest
	env.OnWorkflow(workflows.BackupWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, req workflows.BackupRequest) (*workflows.BackupStatus, error) {
			started = req
			assert.Equal(t, workflows.BackupWorkflowID("nightly-20261122020000"), workflow.GetInfo(ctx).WorkflowExecution.ID)
			return &workflows.BackupStatus{Name: req.Spec.Name, Phase: workflows.PhaseCompleted}, nil
		}).Once()
	old := runsBefore(due, workflows.PhaseCompleted, workflows.PhaseCompleted, workflows.PhaseCompleted, workflows.PhaseFailed)
	listed := append(old, workflows.ScheduleRun{Name: "nightly-20261122020000", Phase: workflows.PhaseCompleted, Time: due.Add(time.Minute)})
	planRetention(env, &workflows.ScheduleRunsResult{Runs: listed, Interval: 24 * time.Hour})
	var deleted []string
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req workflows.DeleteBackupRequest) (*workflows.DeleteBackupResult, error) {
			assert.Equal(t, "retention", req.Reason)
			assert.Equal(t, spec.Template.StorageLocation, req.Location)
			deleted = append(deleted, req.Backup)
			return &workflows.DeleteBackupResult{Backup: req.Backup}, nil
		})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, workflows.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, "nightly-20261122020000", started.Spec.Name)
	assert.Equal(t, "nightly", started.Spec.Schedule)
	assert.Equal(t, spec.Template.StorageLocation, started.Spec.StorageLocation)
	assert.Equal(t, workflows.PhaseCompleted, res.Phase)
	// Keep the new run and the newest old completed one; the newest
	// failed run stays (keepFailed 1).
	assert.ElementsMatch(t, []string{old[0].Name, old[1].Name}, deleted)
	assert.ElementsMatch(t, deleted, res.Deleted)
	assert.Equal(t, workflows.HealthHealthy, res.Health.State)
}

// TestScheduledRunTooLongIsDegraded: a backup outlasting maxRunDuration
// marks the run Degraded, and it stays so after the backup ends.
func TestScheduledRunTooLongIsDegraded(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := nightly()
	spec.MaxRunDuration = &metav1.Duration{Duration: time.Hour}

	env.OnWorkflow(workflows.BackupWorkflowName, mock.Anything, mock.Anything).After(90*time.Minute).
		Return(&workflows.BackupStatus{Phase: workflows.PhaseCompleted}, nil).Once()
	planRetention(env, &workflows.ScheduleRunsResult{Runs: []workflows.ScheduleRun{{Name: "nightly-20261122020000", Phase: workflows.PhaseCompleted, Time: due.Add(90 * time.Minute)}}, Interval: 24 * time.Hour})
	var healthDuringRun string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryStatus)
		require.NoError(t, err)
		var res workflows.ScheduledBackupResult
		require.NoError(t, v.Get(&res))
		healthDuringRun = res.Health.State
	}, 61*time.Minute)

	env.ExecuteWorkflow(ScheduledBackupWorkflow, workflows.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, workflows.HealthDegraded, healthDuringRun)
	assert.Equal(t, workflows.HealthDegraded, res.Health.State)
	assert.Contains(t, res.Health.Reasons[0], "has run for more than maxRunDuration 1h0m0s")
}

// TestScheduledRunFailedBackupStillAppliesRetention: a failed backup
// fails the run, after retention ran.
func TestScheduledRunFailedBackupStillAppliesRetention(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := nightly()
	env.OnWorkflow(workflows.BackupWorkflowName, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("api server gone", workflows.ErrTypeClusterUnreachable, nil)).Once()
	planRetention(env, &workflows.ScheduleRunsResult{Interval: 24 * time.Hour})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, workflows.ScheduledBackupRequest{Schedule: spec})
	require.Error(t, env.GetWorkflowError())
	assert.Contains(t, env.GetWorkflowError().Error(), "api server gone")
}

// TestRetentionGoesPageByPage: a schedule with more runs to delete than
// a page deletes them a page per ApplyRetention run, continuing as new,
// each once; the result counts them all and names the first ones only.
func TestRetentionGoesPageByPage(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := nightly()
	spec.Retention = workflows.RetentionPolicy{KeepLast: ptr.To(1)}
	env.OnWorkflow(workflows.BackupWorkflowName, mock.Anything, mock.Anything).
		Return(&workflows.BackupStatus{Phase: workflows.PhaseCompleted}, nil).Once()
	phases := make([]workflows.Phase, 2*workflows.DefaultRetentionPage+21)
	for i := range phases {
		phases[i] = workflows.PhaseCompleted
	}
	listed := &workflows.ScheduleRunsResult{Runs: runsBefore(due, phases...), Interval: 24 * time.Hour}
	// The test environment runs activities on goroutines of their own,
	// and a page's deletions at once.
	var mu sync.Mutex
	planned := 0
	env.OnActivity(storeActs.PlanRetention, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in workflows.RetentionPageInput) (*workflows.RetentionPage, error) {
			mu.Lock()
			defer mu.Unlock()
			planned++
			return workflows.PageRetention(*listed, in), nil
		})
	deleted := map[string]int{}
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req workflows.DeleteBackupRequest) (*workflows.DeleteBackupResult, error) {
			mu.Lock()
			defer mu.Unlock()
			deleted[req.Backup]++
			listed.Runs = slices.DeleteFunc(listed.Runs, func(r workflows.ScheduleRun) bool { return r.Name == req.Backup })
			return &workflows.DeleteBackupResult{Backup: req.Backup}, nil
		})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, workflows.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 3, planned, "one plan per page")
	assert.Len(t, deleted, len(phases)-1, "all but the newest run")
	for name, n := range deleted {
		assert.Equal(t, 1, n, name)
	}
	assert.Equal(t, len(phases)-1, res.DeletedTotal)
	assert.Len(t, res.Deleted, workflows.MaxReportedDeletions)
	assert.Len(t, listed.Runs, 1, "the newest run is kept")
}
