package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
)

// TestRepositoryStepsSurviveAWorkerKill SIGKILLs the worker while it runs
// one of its own repository steps (a backup deletion's DeleteVolumeData,
// repository maintenance, a verification's two steps), and the next
// worker finishes the step: the deleted backup's kopia snapshots are
// gone, the other backups' data still restores byte for byte, maintenance
// runs again under the same owner, and the verification finds the kept
// backup whole.
//
// Both steps take well under a second on this small repository, so the
// test steps the worker and kills it while it holds the step, and the
// run's history must show the step's retried attempt. Should a workflow
// close between two steps, the next deletion or maintenance run is tried.
func TestRepositoryStepsSurviveAWorkerKill(t *testing.T) {
	t.Parallel()
	m := newMoverStack(t)
	// Short heartbeats: a killed worker's step is retried within seconds.
	startWorker := func() *proc { return m.startMoverWorkerArgs(repoPassword, []string{"--heartbeat-timeout", "5s"}) }
	w := startWorker()
	ctx := context.Background()
	makeClaims(t, m.stack, "rk", "data")
	want := fillVolume(t, m.stack, "rk", "data", datatree.Spec{LargeFiles: 1, LargeSize: 4 << 20, SmallFiles: 500, SmallSize: 4096, Seed: 31})
	names := []string{"rk-1", "rk-2", "rk-3", "rk-4"}
	for _, name := range names {
		m.backup(v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{"rk"}, SnapshotMoveData: true,
			NativeSnapshots: v1alpha1.NativeSnapshotsDelete})
	}
	kept, err := m.starter.GetBackup(ctx, "rk-4")
	require.NoError(t, err)
	keptUpload := uploadOf(t, kept.Status, "rk", "data")

	t.Run("a deletion's kopia step", func(t *testing.T) {
		killed := ""
		for _, name := range names[:3] {
			res, err := m.starter.DeleteBackup(ctx, name, false)
			require.NoError(t, err)
			if catchActivity(t, m.stack, w, res.WorkflowID, deleteVolumeDataActivity) {
				w.kill()
				w = startWorker()
				killed = name
			}
			require.NoError(t, m.starter.WaitRun(ctx, res.WorkflowID, res.RunID))
			if killed != "" {
				assert.Greater(t, activityAttempt(t, m.stack, res.WorkflowID, deleteVolumeDataActivity), int32(1),
					"the kill landed mid-step: the kopia step was retried")
			}
			complete, checkpoints, _ := m.snapshotCounts(t, name)
			assert.Zero(t, complete+checkpoints, "the kopia snapshots of deleted backup %s are gone", name)
			if killed != "" {
				break
			}
		}
		require.NotEmpty(t, killed, "the worker was killed while a deletion's kopia step ran")
		assert.Equal(t, 1, m.completeSnapshots(t, "rk-4"), "the kept backup's snapshot stays")
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, keptUpload.SnapshotID), 10))
	})

	t.Run("repository maintenance", func(t *testing.T) {
		maintain := func(id string) client.WorkflowRun {
			run, err := m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: v1alpha1.TaskQueue},
				v1alpha1.RepositoryMaintenanceWorkflowName, v1alpha1.MaintenanceRequest{Location: m.location, Mode: "full"})
			require.NoError(t, err)
			return run
		}
		killed := false
		for i := 1; i <= 3 && !killed; i++ {
			run := maintain(fmt.Sprintf("maintenance-kill-%d", i))
			if catchActivity(t, m.stack, w, run.GetID(), maintainRepoActivity) {
				w.kill()
				w = startWorker()
				killed = true
			}
			var res v1alpha1.MaintenanceResult
			require.NoError(t, run.Get(ctx, &res), "the maintenance finishes")
			assert.True(t, res.Ran)
			if killed {
				assert.Greater(t, activityAttempt(t, m.stack, run.GetID(), maintainRepoActivity), int32(1),
					"the kill landed mid-step: maintenance was retried")
			}
		}
		require.True(t, killed, "the worker was killed while maintenance ran")

		var again v1alpha1.MaintenanceResult
		require.NoError(t, maintain("maintenance-after-kill").Get(ctx, &again), "the maintenance owner is still cairn's")
		recordHistory(t, m.stack, "maintenance-after-kill", "maintenance_completed.json")
		assert.True(t, again.Ran)
		assert.Equal(t, 1, m.completeSnapshots(t, "rk-4"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, keptUpload.SnapshotID), 10), "maintenance kept the remaining data whole")
	})

	t.Run("backup verify, its objects then its volume data", func(t *testing.T) {
		for _, step := range []string{verifyBackupDataActivity, verifyBackupVolumesActivity} {
			var run client.WorkflowRun
			catchInNewRun(t, m.stack, w, step, func(try int) string {
				var err error
				run, err = m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("verify-kill-%s-%d", step, try),
					TaskQueue: v1alpha1.TaskQueue}, v1alpha1.VerifyBackupWorkflowName,
					v1alpha1.VerifyBackupRequest{Backup: "rk-4", Location: m.location, Full: true})
				require.NoError(t, err)
				return run.GetID()
			})
			w.kill()
			w = startWorker()
			var res v1alpha1.VerifyBackupResult
			require.NoError(t, run.Get(ctx, &res), "the verification finishes")
			assert.True(t, res.OK(), "%+v", res)
			require.NotNil(t, res.VolumeData)
			assert.Equal(t, 1, res.VolumeData.Snapshots)
			assert.Positive(t, res.VolumeData.ReadBytes, "a full verification reads the data back")
			assert.Greater(t, activityAttempt(t, m.stack, run.GetID(), step), int32(1), "the kill landed mid-step: %s was retried", step)
		}
	})
}

// catchActivity steps the worker (a moment running, then frozen while
// the test describes the workflow) until the workflow's activity was
// handed to it, and leaves the worker frozen there (true): a kill then
// lands before the worker reports the activity's end, however short the
// step. False when the workflow closed without that being seen.
func catchActivity(t *testing.T, s *stack, w *proc, workflowID, activity string) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		w.freeze()
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) { // a child not started yet
			w.thaw()
			time.Sleep(5 * time.Millisecond)
			continue
		}
		require.NoError(t, err)
		if activityRunning(desc, activity) {
			return true
		}
		w.thaw()
		if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: activity %s neither started nor was the workflow done within a minute", workflowID, activity)
	return false
}

// catchInNewRun starts runs (start returns each one's workflow ID) until
// one is caught with the worker frozen inside activity, and returns that
// run's try, from 1: a run whose step ended before the catch is followed
// by another.
func catchInNewRun(t *testing.T, s *stack, w *proc, activity string, start func(try int) (workflowID string)) int {
	t.Helper()
	for try := 1; try <= stepKillTries; try++ {
		if catchActivity(t, s, w, start(try), activity) {
			return try
		}
	}
	require.FailNow(t, "never caught", "the worker was never frozen inside %s in %d runs", activity, stepKillTries)
	return 0
}

// waitActivityStarted waits until a worker has started the named activity
// of workflowID, so a kill after it lands mid-step. A run's progress may
// name a step before a worker has picked it up: under load the gap is
// long enough for a kill to land before the step, which then runs once.
func waitActivityStarted(t *testing.T, s *stack, workflowID, activity string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hang, not a verdict
	for time.Now().Before(deadline) {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		require.NoError(t, err)
		if activityRunning(desc, activity) {
			return
		}
		time.Sleep(10 * time.Millisecond) // Temporal tells no one of a start: ask again
	}
	t.Fatalf("%s: activity %s not started within 2 minutes", workflowID, activity)
}

// activityRunning reports whether a worker runs the named activity of the
// described workflow.
func activityRunning(desc *workflowservice.DescribeWorkflowExecutionResponse, activity string) bool {
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() == activity && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// activityAttempt is the attempt of the named activity's last start in
// the workflow's history: above 1 when a retry ran it again.
func activityAttempt(t *testing.T, s *stack, workflowID, activity string) int32 {
	t.Helper()
	scheduled := map[int64]string{}
	var attempt int32
	for _, ev := range runHistory(t, s, workflowID) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == activity {
			attempt = max(attempt, a.GetAttempt())
		}
	}
	return attempt
}
