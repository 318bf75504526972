package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// backupObjects lists what a backup still has in the location.
func backupObjects(t *testing.T, s *stack, name string) []string {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), s.location)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup(name).Prefix())
	require.NoError(t, err)
	return keys
}

func listedBackups(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	list, err := s.starter.ListBackups(context.Background())
	require.NoError(t, err)
	names := map[string]bool{}
	for _, v := range list.Items {
		names[v.Name] = true
	}
	return names
}

// TestBackupDeletionAndExpiry deletes a backup on request and an expired
// one through the worker's expiry schedule, refuses to delete a running
// backup unless told to cancel it, and finishes a deletion whose worker
// was killed half-way.
func TestBackupDeletionAndExpiry(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	seedConfigMaps(t, s.cluster.Config(), "del", 1, 200)
	// Short heartbeats: a killed worker's step is retried within seconds.
	startWorker := func() *proc {
		return s.startWorker("--location", s.location, "--page-interval", "200ms", "--delete-interval", "1500ms", "--heartbeat-timeout", "5s")
	}
	worker := startWorker()
	ctx := context.Background()

	short := &metav1.Duration{Duration: time.Second}
	s.backup(v1alpha1.BackupSpec{Name: "expiring", IncludedNamespaces: []string{"del-*"}, TTL: short})
	s.backup(v1alpha1.BackupSpec{Name: "kept", IncludedNamespaces: []string{"del-*"}})
	s.backup(v1alpha1.BackupSpec{Name: "to-delete", IncludedNamespaces: []string{"del-*"}})
	s.backup(v1alpha1.BackupSpec{Name: "killed-mid-delete", IncludedNamespaces: []string{"del-*"}})

	t.Run("expired backups go on the schedule, through a worker kill", func(t *testing.T) {
		time.Sleep(time.Second) // past the 1s expiry
		require.NoError(t, s.temporalC.ScheduleClient().GetHandle(ctx, v1alpha1.ExpireScheduleID).Trigger(ctx, client.ScheduleTriggerOptions{}))
		// The worker dies frozen in the expiry's deletion of the backup,
		// which deletes an object every 1.5 s: it cannot end first.
		deletion := v1alpha1.DeleteWorkflowID("expiring")
		require.True(t, catchActivity(t, s, worker, deletion, deleteBackupDataActivity), "the expiry's deletion was caught")
		worker.kill()
		worker = startWorker()
		until(t, func() bool { return len(backupObjects(t, s, "expiring")) == 0 }, 2*time.Minute, 300*time.Millisecond,
			"the expired backup's objects are deleted")
		require.NoError(t, s.starter.WaitRun(ctx, deletion, ""))
		assert.Greater(t, activityAttempt(t, s, deletion, deleteBackupDataActivity), int32(1),
			"the kill landed mid-deletion: DeleteBackupData ran again")
		v, err := s.starter.GetBackup(ctx, "expiring")
		require.NoError(t, err)
		assert.Equal(t, v1alpha1.PhaseDeleted, v.Phase)
		names := listedBackups(t, s)
		assert.False(t, names["expiring"], "a deleted backup is not listed")
		assert.True(t, names["kept"] && names["to-delete"], "backups that have not expired stay: %v", names)
		recordLatest(t, s, v1alpha1.ExpireBackupsWorkflowName, "expire_completed.json")
	})

	t.Run("delete on request", func(t *testing.T) {
		_, stderr, code := s.cli("backup", "delete", "to-delete", "--wait")
		require.Equal(t, 0, code, stderr)
		recordHistory(t, s, v1alpha1.DeleteWorkflowID("to-delete"), "delete_completed.json")
		assert.Empty(t, backupObjects(t, s, "to-delete"))
		stdout, _, code := s.cli("backup", "get", "to-delete", "-o", "json")
		require.Equal(t, 0, code)
		var v starter.BackupView
		require.NoError(t, json.Unmarshal([]byte(stdout), &v))
		assert.Equal(t, v1alpha1.PhaseDeleted, v.Phase)
		_, _, code = s.cli("backup", "delete", "no-such-backup")
		assert.Equal(t, starter.ExitNotFound, code)
	})

	t.Run("a running backup is deleted only with cancel", func(t *testing.T) {
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{
			BackupSpec: v1alpha1.BackupSpec{Name: "busy", IncludedNamespaces: []string{"del-*"}},
			Options:    v1alpha1.BackupOptions{PageSize: 5}})
		require.NoError(t, err)
		worker.freeze() // the backup cannot end while the plain delete is refused
		_, stderr, code := s.cli("backup", "delete", "busy")
		worker.thaw()
		assert.Equal(t, starter.ExitConflict, code, stderr)
		assert.Contains(t, stderr, "still running")
		_, stderr, code = s.cli("backup", "delete", "busy", "--cancel", "--wait")
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, backupObjects(t, s, "busy"))
	})

	t.Run("a killed worker's deletion is finished by the next", func(t *testing.T) {
		before := backupObjects(t, s, "killed-mid-delete")
		require.GreaterOrEqual(t, len(before), 3, "a committed backup has several objects: %v", before)
		_, err := s.starter.DeleteBackup(ctx, "killed-mid-delete", false)
		require.NoError(t, err)
		// backup.json goes first; kill once it is gone and objects remain.
		until(t, func() bool {
			keys := backupObjects(t, s, "killed-mid-delete")
			return len(keys) > 0 && len(keys) < len(before) && !slices.Contains(keys, location.Backup("killed-mid-delete").Metadata())
		}, time.Minute, 50*time.Millisecond, "deletion under way")
		worker.kill()
		assert.False(t, listedBackups(t, s)["killed-mid-delete"], "a half-deleted backup is not listed")
		s.startWorker("--location", s.location, "--delete-interval", "100ms")
		require.NoError(t, s.starter.WaitRun(ctx, v1alpha1.DeleteWorkflowID("killed-mid-delete"), ""))
		assert.Empty(t, backupObjects(t, s, "killed-mid-delete"))
		assert.Greater(t, activityAttempt(t, s, v1alpha1.DeleteWorkflowID("killed-mid-delete"), deleteBackupDataActivity), int32(1),
			"the kill landed mid-step: DeleteBackupData ran again")
	})
}
