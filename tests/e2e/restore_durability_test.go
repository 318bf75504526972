package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// TestRestoreResumesAfterWorkerKill kills the worker in the middle of
// applying a few thousand ConfigMaps; another worker finishes the restore
// from the last stored batch, and every object is restored exactly once.
func TestRestoreResumesAfterWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	want := seedConfigMaps(t, s.cluster.Config(), "rk", seedNamespaces, seedPerNS)
	first := s.startWorker("--batch-interval", "150ms")
	s.backup(v1alpha1.BackupSpec{Name: "rk-1", IncludedNamespaces: []string{"rk-*"}})

	mapping := map[string]string{}
	for i := range seedNamespaces {
		mapping[fmt.Sprintf("rk-%02d", i)] = fmt.Sprintf("rk-%02d-back", i)
	}
	req := starter.CreateRestoreRequest{
		RestoreSpec: v1alpha1.RestoreSpec{Name: "rk-r", BackupName: "rk-1", NamespaceMapping: mapping},
		Options:     v1alpha1.RestoreOptions{BatchSize: 50, HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}},
	}
	_, err := s.starter.CreateRestore(context.Background(), req)
	require.NoError(t, err)
	waitApplying(t, s, "rk-r", "configmaps", 5)
	first.kill()
	worker := s.startWorker("--batch-interval", "150ms")

	v := s.waitRestore("rk-r", 4*time.Minute)
	outcomes := s.outcomes("rk-r") // fails on any item listed twice
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "failed: %v", failedOutcomes(outcomes))
	for key := range want {
		ns, name, _ := strings.Cut(key, "/")
		o, ok := outcomes["configmaps "+mapping[ns]+"/"+name]
		if assert.True(t, ok, "%s missing from the results", key) {
			assert.Equal(t, v1alpha1.ItemRestored, o.Result, "%s: %s", key, o.Reason)
		}
	}
	kc := fastClient(t, s.cluster.Config())
	restored := 0
	for _, ns := range mapping {
		list, err := kc.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "cairn.io/restore-name=rk-r,app=seed"})
		require.NoError(t, err)
		restored += len(list.Items)
	}
	assert.Equal(t, len(want), restored, "ConfigMaps in the mapped namespaces")

	resumed := restoreLogLines(t, s, "rk-r", "Resuming")
	var fromBatch float64
	for _, l := range resumed {
		if l["resource"] == "configmaps" {
			fromBatch = l["batch"].(float64)
		}
	}
	assert.GreaterOrEqual(t, fromBatch, float64(5), "the retried apply should resume after the stored batches; log lines: %v", resumed)
	runs := applyRuns(t, s, "rk-r")
	require.Contains(t, runs, "configmaps")
	assert.Greater(t, runs["configmaps"].attempt, int32(1), "the kill landed mid-step: the ConfigMaps apply was retried")

	t.Run("Temporal killed mid-apply", func(t *testing.T) {
		tMapping := restoreAgain(t, s, req, "rk-temporal", "-t")
		waitApplying(t, s, "rk-temporal", "configmaps", 3)
		s.temporal.kill()
		killedAt := time.Now()
		time.Sleep(2 * time.Second) // the worker keeps applying, then polls a dead server
		s.startTemporal()           // same port, same SQLite file

		v := s.waitRestore("rk-temporal", 4*time.Minute)
		o := s.outcomes("rk-temporal")
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "failed: %v", failedOutcomes(o))
		for key := range want {
			ns, name, _ := strings.Cut(key, "/")
			assert.Equal(t, v1alpha1.ItemRestored, o["configmaps "+tMapping[ns]+"/"+name].Result, key)
		}
		runs := applyRuns(t, s, "rk-temporal")
		require.Contains(t, runs, "configmaps")
		assert.True(t, runs["configmaps"].completed.After(killedAt), "the kill landed mid-step: ConfigMaps were still being applied")
	})

	t.Run("cancel mid-apply", func(t *testing.T) {
		restoreAgain(t, s, req, "rk-cancel", "-c")
		waitApplying(t, s, "rk-cancel", "configmaps", 2)
		// The restore stands still while the cancel is asked for, so the
		// cancel lands mid-apply whatever the machine's speed.
		worker.freeze()
		_, stderr, code := s.cli("restore", "cancel", "rk-cancel")
		worker.thaw()
		require.Equal(t, 0, code, stderr)
		v := s.waitRestore("rk-cancel", time.Minute)
		assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
		restored := 0
		for _, o := range s.outcomes("rk-cancel") {
			if o.Result == v1alpha1.ItemRestored && o.Resource == "configmaps" {
				restored++
			}
		}
		assert.Equal(t, v.Status.ItemsRestored-v.Status.Resources["namespaces"].Restored, restored,
			"the results list what was applied before the cancel")
		assert.Greater(t, restored, 0)
		assert.Less(t, restored, len(want), "the cancel stopped the restore")
	})
}

// restoreAgain starts req once more as restore name, into the mapped
// namespaces with suffix appended, and returns that mapping.
func restoreAgain(t *testing.T, s *stack, req starter.CreateRestoreRequest, name, suffix string) map[string]string {
	t.Helper()
	mapping := map[string]string{}
	for from, to := range req.NamespaceMapping {
		mapping[from] = to + suffix
	}
	req.Name, req.NamespaceMapping = name, mapping
	_, err := s.starter.CreateRestore(context.Background(), req)
	require.NoError(t, err)
	return mapping
}

// waitApplying waits until the running apply of resource has stored at
// least batches batches.
func waitApplying(t *testing.T, s *stack, restoreName, resource string, batches int) {
	t.Helper()
	waitHeartbeat(t, s, v1alpha1.RestoreWorkflowID(restoreName), applyActivity, func(p restore.ApplyProgress) bool {
		if p.NextBatch < batches {
			return false
		}
		t.Logf("%s: %d batches applied (%d restored)", resource, p.NextBatch, p.Outcome.Restored)
		return true
	})
}

// restoreLogLines returns the restore's stored log lines whose msg is msg.
func restoreLogLines(t *testing.T, s *stack, name, msg string) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, s.starter.RestoreLogs(context.Background(), name, &buf))
	return linesWithMsg(&buf, msg)
}
