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

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/deletion"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func fakeBackup(workflow.Context, v1alpha1.BackupRequest) (*v1alpha1.BackupStatus, error) {
	return nil, nil
}

func fakeListRuns(context.Context, v1alpha1.ScheduleRunsInput) (*v1alpha1.ScheduleRunsResult, error) {
	return nil, nil
}

// nightly is a valid schedule that keeps its last 7 runs.
func nightly() v1alpha1.ScheduleSpec {
	return v1alpha1.ScheduleSpec{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin",
		Retention: v1alpha1.RetentionPolicy{KeepLast: ptr.To(7)}}.WithDefaults("file:///tmp/loc")
}

// runsBefore are earlier runs of nightly, one per phase, an hour apart,
// the last an hour before due.
func runsBefore(due time.Time, phases ...v1alpha1.Phase) []v1alpha1.ScheduleRun {
	var out []v1alpha1.ScheduleRun
	for i, phase := range phases {
		at := due.Add(-time.Duration(len(phases)-i) * time.Hour)
		out = append(out, v1alpha1.ScheduleRun{Name: v1alpha1.ScheduledBackupName("nightly", at), Phase: phase, Time: at, Bytes: 100})
	}
	return out
}

// planRetention answers the retention's plan from listed, as the store
// would list it; a deletion removes its run from listed.
func planRetention(env *testsuite.TestWorkflowEnvironment, listed *v1alpha1.ScheduleRunsResult) {
	env.OnActivity(storeActs.PlanRetention, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.RetentionPageInput) (*v1alpha1.RetentionPage, error) {
			return v1alpha1.PageRetention(*listed, in), nil
		})
}

func newScheduledEnv(t *testing.T, due time.Time) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.RegisterDeletionFakes(env)
	flowtest.RegisterVolumeFakes(env)
	env.RegisterWorkflowWithOptions(deletion.DeleteBackupWorkflow, workflow.RegisterOptions{Name: v1alpha1.DeleteBackupWorkflowName})
	t.Cleanup(func() { env.AssertExpectations(t) })
	env.RegisterWorkflowWithOptions(fakeBackup, workflow.RegisterOptions{Name: v1alpha1.BackupWorkflowName})
	flowtest.Fake(env, storeActs.ListScheduleRuns, fakeListRuns)
	env.RegisterWorkflowWithOptions(ApplyRetentionWorkflow, workflow.RegisterOptions{Name: v1alpha1.ApplyRetentionWorkflowName})
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
	spec.Retention = v1alpha1.RetentionPolicy{KeepLast: ptr.To(2)}

	var started v1alpha1.BackupRequest
	env.OnWorkflow(v1alpha1.BackupWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, req v1alpha1.BackupRequest) (*v1alpha1.BackupStatus, error) {
			started = req
			assert.Equal(t, v1alpha1.BackupWorkflowID("nightly-20261122020000"), workflow.GetInfo(ctx).WorkflowExecution.ID)
			return &v1alpha1.BackupStatus{Name: req.Spec.Name, Phase: v1alpha1.PhaseCompleted}, nil
		}).Once()
	old := runsBefore(due, v1alpha1.PhaseCompleted, v1alpha1.PhaseCompleted, v1alpha1.PhaseCompleted, v1alpha1.PhaseFailed)
	listed := append(old, v1alpha1.ScheduleRun{Name: "nightly-20261122020000", Phase: v1alpha1.PhaseCompleted, Time: due.Add(time.Minute)})
	planRetention(env, &v1alpha1.ScheduleRunsResult{Runs: listed, Interval: 24 * time.Hour})
	var deleted []string
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
			assert.Equal(t, "retention", req.Reason)
			assert.Equal(t, spec.Template.StorageLocation, req.Location)
			deleted = append(deleted, req.Backup)
			return &v1alpha1.DeleteBackupResult{Backup: req.Backup}, nil
		})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, v1alpha1.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, "nightly-20261122020000", started.Spec.Name)
	assert.Equal(t, "nightly", started.Spec.Schedule)
	assert.Equal(t, spec.Template.StorageLocation, started.Spec.StorageLocation)
	assert.Equal(t, v1alpha1.PhaseCompleted, res.Phase)
	// Keep the new run and the newest old completed one; the newest
	// failed run stays (keepFailed 1).
	assert.ElementsMatch(t, []string{old[0].Name, old[1].Name}, deleted)
	assert.ElementsMatch(t, deleted, res.Deleted)
	assert.Equal(t, v1alpha1.HealthHealthy, res.Health.State)
}

// TestScheduledRunTooLongIsDegraded: a backup outlasting maxRunDuration
// marks the run Degraded, and it stays so after the backup ends.
func TestScheduledRunTooLongIsDegraded(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := nightly()
	spec.MaxRunDuration = &metav1.Duration{Duration: time.Hour}

	env.OnWorkflow(v1alpha1.BackupWorkflowName, mock.Anything, mock.Anything).After(90*time.Minute).
		Return(&v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted}, nil).Once()
	planRetention(env, &v1alpha1.ScheduleRunsResult{Runs: []v1alpha1.ScheduleRun{{Name: "nightly-20261122020000", Phase: v1alpha1.PhaseCompleted, Time: due.Add(90 * time.Minute)}}, Interval: 24 * time.Hour})
	var healthDuringRun string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(v1alpha1.QueryStatus)
		require.NoError(t, err)
		var res v1alpha1.ScheduledBackupResult
		require.NoError(t, v.Get(&res))
		healthDuringRun = res.Health.State
	}, 61*time.Minute)

	env.ExecuteWorkflow(ScheduledBackupWorkflow, v1alpha1.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, v1alpha1.HealthDegraded, healthDuringRun)
	assert.Equal(t, v1alpha1.HealthDegraded, res.Health.State)
	assert.Contains(t, res.Health.Reasons[0], "has run for more than maxRunDuration 1h0m0s")
}

// TestScheduledRunFailedBackupStillAppliesRetention: a failed backup
// fails the run, after retention ran.
func TestScheduledRunFailedBackupStillAppliesRetention(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	env := newScheduledEnv(t, due)
	spec := nightly()
	env.OnWorkflow(v1alpha1.BackupWorkflowName, mock.Anything, mock.Anything).
		Return(nil, temporal.NewNonRetryableApplicationError("api server gone", v1alpha1.ErrTypeClusterUnreachable, nil)).Once()
	planRetention(env, &v1alpha1.ScheduleRunsResult{Interval: 24 * time.Hour})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, v1alpha1.ScheduledBackupRequest{Schedule: spec})
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
	spec.Retention = v1alpha1.RetentionPolicy{KeepLast: ptr.To(1)}
	env.OnWorkflow(v1alpha1.BackupWorkflowName, mock.Anything, mock.Anything).
		Return(&v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted}, nil).Once()
	phases := make([]v1alpha1.Phase, 2*v1alpha1.DefaultRetentionPage+21)
	for i := range phases {
		phases[i] = v1alpha1.PhaseCompleted
	}
	listed := &v1alpha1.ScheduleRunsResult{Runs: runsBefore(due, phases...), Interval: 24 * time.Hour}
	// The test environment runs activities on goroutines of their own,
	// and a page's deletions at once.
	var mu sync.Mutex
	planned := 0
	env.OnActivity(storeActs.PlanRetention, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.RetentionPageInput) (*v1alpha1.RetentionPage, error) {
			mu.Lock()
			defer mu.Unlock()
			planned++
			return v1alpha1.PageRetention(*listed, in), nil
		})
	deleted := map[string]int{}
	env.OnActivity(storeActs.DeleteBackupData, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req v1alpha1.DeleteBackupRequest) (*v1alpha1.DeleteBackupResult, error) {
			mu.Lock()
			defer mu.Unlock()
			deleted[req.Backup]++
			listed.Runs = slices.DeleteFunc(listed.Runs, func(r v1alpha1.ScheduleRun) bool { return r.Name == req.Backup })
			return &v1alpha1.DeleteBackupResult{Backup: req.Backup}, nil
		})

	env.ExecuteWorkflow(ScheduledBackupWorkflow, v1alpha1.ScheduledBackupRequest{Schedule: spec})
	require.NoError(t, env.GetWorkflowError())
	var res v1alpha1.ScheduledBackupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 3, planned, "one plan per page")
	assert.Len(t, deleted, len(phases)-1, "all but the newest run")
	for name, n := range deleted {
		assert.Equal(t, 1, n, name)
	}
	assert.Equal(t, len(phases)-1, res.DeletedTotal)
	assert.Len(t, res.Deleted, v1alpha1.MaxReportedDeletions)
	assert.Len(t, listed.Runs, 1, "the newest run is kept")
}
