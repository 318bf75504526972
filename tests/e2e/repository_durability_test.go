package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/workflows"
)

// TestRepositoryStepsSurviveAWorkerKill SIGKILLs the worker while it runs
// one of its own kopia steps (a backup deletion's DeleteVolumeData,
// repository maintenance), and the next worker finishes the step: the
// deleted backup's kopia snapshots are gone, the other backups' data still
// restores byte for byte, and maintenance runs again under the same owner.
//
// Both steps take well under a second on this small repository, so a
// kill can come too late (the step already done); the test then tries the
// next deletion or maintenance run, and requires one kill mid-step.
func TestRepositoryStepsSurviveAWorkerKill(t *testing.T) {
	m := newMoverStack(t)
	w := m.startMoverWorker()
	ctx := context.Background()
	makeClaims(t, m.stack, "rk", "data")
	want := fillVolume(t, m.stack, "rk", "data", datatree.Spec{LargeFiles: 1, LargeSize: 4 << 20, SmallFiles: 500, SmallSize: 4096, Seed: 31})
	names := []string{"rk-1", "rk-2", "rk-3", "rk-4"}
	for _, name := range names {
		m.backup(workflows.BackupSpec{Name: name, IncludedNamespaces: []string{"rk"}, SnapshotMoveData: true,
			NativeSnapshots: workflows.NativeSnapshotsDelete})
	}
	kept, err := m.starter.GetBackup(ctx, "rk-4")
	require.NoError(t, err)
	keptUpload := uploadOf(t, kept.Status, "rk", "data")

	t.Run("a deletion's kopia step", func(t *testing.T) {
		killed := ""
		for _, name := range names[:3] {
			res, err := m.starter.DeleteBackup(ctx, name, false)
			require.NoError(t, err)
			if activityStarted(t, m.stack, res.WorkflowID, workflows.DeleteVolumeDataActivity) {
				w.kill()
				w = m.startMoverWorker()
				killed = name
			}
			require.NoError(t, m.starter.WaitRun(ctx, res.WorkflowID, res.RunID))
			complete, checkpoints := m.snapshotCounts(t, name)
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
			run, err := m.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue},
				workflows.RepositoryMaintenanceWorkflowName, workflows.MaintenanceRequest{Location: m.location, Mode: "full"})
			require.NoError(t, err)
			return run
		}
		killed := false
		for i := 1; i <= 3 && !killed; i++ {
			run := maintain(fmt.Sprintf("maintenance-kill-%d", i))
			if activityStarted(t, m.stack, run.GetID(), workflows.MaintainRepositoryActivity) {
				w.kill()
				w = m.startMoverWorker()
				killed = true
			}
			var res workflows.MaintenanceResult
			require.NoError(t, run.Get(ctx, &res), "the maintenance finishes")
			assert.True(t, res.Ran)
		}
		require.True(t, killed, "the worker was killed while maintenance ran")

		var again workflows.MaintenanceResult
		require.NoError(t, maintain("maintenance-after-kill").Get(ctx, &again), "the maintenance owner is still cairn's")
		assert.True(t, again.Ran)
		assert.Equal(t, 1, m.completeSnapshots(t, "rk-4"))
		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, keptUpload.SnapshotID), 10), "maintenance kept the remaining data whole")
	})
}

// activityStarted polls a workflow until a worker has started the named
// activity (true) or the workflow has closed without that being seen
// (false).
func activityStarted(t *testing.T, s *stack, workflowID, activity string) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		require.NoError(t, err)
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == activity && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: activity %s neither started nor was the workflow done within a minute", workflowID, activity)
	return false
}
