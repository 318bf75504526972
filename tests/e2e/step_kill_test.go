package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// stepKillTries bounds how many runs a test starts to catch a short step
// with the worker frozen in it.
const stepKillTries = 4

// TestShortStepsSurviveAWorkerKill kills the worker while it finalizes a
// backup, plans a restore and finalizes a restore. Each step is caught
// with the worker frozen inside it (catchActivity), so the kill lands
// before the step reports its end however short it is; the history shows
// the step ran again, and the run ends with every object exactly once.
// The backups are encrypted: no kill leaves a plain copy of anything in
// the worker's $TMPDIR or in the location.
func TestShortStepsSurviveAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	want := seedConfigMaps(t, s.cluster.Config(), "sk", seedNamespaces, 50)
	tmp := t.TempDir()
	key := s.useEncryptionKey(newKey(t))
	startWorker := func() *proc {
		return startProcEnv(t, "worker", []string{"TMPDIR=" + tmp}, "worker", "--temporal-address", s.temporalAddr,
			"--kubeconfig", s.cluster.KubeconfigPath(), "--encryption-key", key, "--datamover-encryption-key-secret", "cairn-encryption-key")
	}
	w := startWorker()
	ctx := context.Background()
	t.Cleanup(func() { assertNothingPlain(t, s, tmp) })
	// killIn starts runs until one is caught in activity, kills the
	// worker there and starts another, and returns the caught run's name.
	killIn := func(activity string, start func(name string) string) string {
		var name string
		catchInNewRun(t, s, w, activity, func(try int) string {
			name = fmt.Sprintf("%s-%d", strings.ToLower(activity), try)
			return start(name)
		})
		w.kill()
		assertNothingPlain(t, s, tmp)
		w = startWorker()
		return name
	}

	var backup string
	t.Run("FinalizeBackup", func(t *testing.T) {
		backup = killIn(finalizeBackupActivity, func(name string) string {
			_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{"sk-*"}}})
			require.NoError(t, err)
			return v1alpha1.BackupWorkflowID(name)
		})
		v := s.waitDone(backup, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %+v", v.Status)
		assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID(backup), finalizeBackupActivity), int32(1),
			"the kill landed mid-step: FinalizeBackup ran again")
		assertExactlySeeded(t, s, backup, "sk", want)
	})
	require.NotEmpty(t, backup)

	for _, activity := range []string{planRestoreActivity, finalizeRestoreActivity} {
		t.Run(activity, func(t *testing.T) {
			var mapping map[string]string
			restore := killIn(activity, func(name string) string {
				mapping = map[string]string{}
				for i := range seedNamespaces {
					mapping[fmt.Sprintf("sk-%02d", i)] = fmt.Sprintf("%s-%02d", name, i)
				}
				_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{
					Name: name, BackupName: backup, NamespaceMapping: mapping}})
				require.NoError(t, err)
				return v1alpha1.RestoreWorkflowID(name)
			})
			v := s.waitRestore(restore, 2*time.Minute)
			require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
			assert.Greater(t, activityAttempt(t, s, v1alpha1.RestoreWorkflowID(restore), activity), int32(1),
				"the kill landed mid-step: %s ran again", activity)
			assertRestoredSeed(t, s, mapping, want)
		})
	}
}

// assertRestoredSeed checks that every seeded ConfigMap is in its mapped
// namespace, and nothing more.
func assertRestoredSeed(t *testing.T, s *stack, mapping map[string]string, want map[string]bool) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	got := map[string]bool{}
	for from, to := range mapping {
		list, err := kc.CoreV1().ConfigMaps(to).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				got[from+"/"+cm.Name] = true
			}
		}
	}
	assert.Equal(t, want, got)
}

// assertNothingPlain checks that the worker's $TMPDIR holds nothing and
// that every file of the location but the metadata documents (and the
// manifest of digests) is encrypted, those a killed write left behind
// included.
func assertNothingPlain(t *testing.T, s *stack, tmp string) {
	t.Helper()
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the worker left files in its $TMPDIR")
	root := s.locationDir()
	magic := []byte("age-encryption.org/v1\n")
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Base(path) {
		case "backup.json", "restore.json", "manifest.json":
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		head := data[:min(len(data), len(magic))]
		assert.True(t, bytes.HasPrefix(magic, head) || bytes.HasPrefix(data, magic), "%s is stored in plain", path)
		return nil
	}))
}
