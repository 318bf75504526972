package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// TestFinalizeWaitsForAReadOnlyLocation turns the location's file system
// read-only under the worker, caught frozen inside FinalizeBackup. (Root
// ignores file modes, so the worker runs in a mount namespace of its own
// where the test mounts the location read-only.) Finalize fails,
// is retried with its error in describe, and commits nothing meanwhile;
// once the location is writable again the backup completes with every
// object exactly once.
func TestFinalizeWaitsForAReadOnlyLocation(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	dir := s.locationDir()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	want := seedConfigMaps(t, s.cluster.Config(), "rol", seedNamespaces, 50)
	w := startBinary(t, "worker", "unshare", nil, "--mount", "--propagation", "private",
		cairnBin, "worker", "--temporal-address", s.temporalAddr, "--kubeconfig", s.cluster.KubeconfigPath(), "--log-format", "json")
	// In the worker's namespace only: a read-only bind of the location
	// over itself (the files the worker has open for writing keep their
	// mount, which a remount would refuse), then its removal.
	inWorkerNamespace := func(args ...string) {
		out, err := exec.Command("nsenter", append([]string{"--target", strconv.Itoa(w.cmd.Process.Pid), "--mount"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}

	var name string
	catchInNewRun(t, s, w, finalizeBackupActivity, func(try int) string {
		name = fmt.Sprintf("ro-%d", try)
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
			Name: name, IncludedNamespaces: []string{"rol-*"}}})
		require.NoError(t, err)
		return v1alpha1.BackupWorkflowID(name)
	})
	inWorkerNamespace("mount", "--bind", "-o", "ro", dir, dir)
	w.thaw()

	step := waitRetrying(t, s, name, finalizeBackupActivity)
	assert.Contains(t, step.LastError, "read-only file system")
	v, err := s.starter.GetBackup(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseFinalizing, v.Phase, "nothing is committed while the location is read-only")
	_, err = os.Stat(filepath.Join(dir, "backups", name, "backup.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no backup.json: the half-written backup is not listed")

	inWorkerNamespace("umount", "--lazy", dir)
	v = s.waitDone(name, 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID(name), finalizeBackupActivity), int32(1),
		"the failure landed mid-step: FinalizeBackup ran again")
	assertExactlySeeded(t, s, name, "rol", want)
}

// waitRetrying waits for the event that a backup's step failed and waits
// for another attempt, as describe shows it, and returns that step.
func waitRetrying(t *testing.T, s *stack, backup, activity string) starter.RetryingStep {
	t.Helper()
	var found starter.RetryingStep
	until(t, func() bool {
		v, err := s.starter.GetBackup(context.Background(), backup)
		require.NoError(t, err)
		for _, st := range v.Retrying {
			if st.Step == activity {
				found = st
				return true
			}
		}
		return false
	}, 3*time.Minute, 200*time.Millisecond, "%s failed and is retried", activity)
	return found
}
