package e2e

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

const (
	seedNamespaces = 10
	seedPerNS      = 300 // 3,000 ConfigMaps
)

// slowBackup is a backup of the seeded namespaces whose pages are small and
// whose worker pauses between them, so there is time to kill a process in
// the middle of collecting ConfigMaps.
func slowBackup(name, prefix string) starter.CreateBackupRequest {
	return starter.CreateBackupRequest{
		BackupSpec: v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{prefix + "-*"}},
		Options: v1alpha1.BackupOptions{
			PageSize:         50,
			HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second},
		},
	}
}

// waitMidConfigMaps waits until ConfigMaps are partly collected: at least
// one page stored, the type not finished.
func waitMidConfigMaps(t *testing.T, s *stack, backup string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if p, ok := pendingProgress(t, s, backup, "configmaps"); ok && p.Items >= 100 {
			t.Logf("ConfigMaps in progress: shard %d part %d, %d items stored", p.Shard, p.Part, p.Items)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("ConfigMaps collection never got under way")
}

// assertExactlySeeded checks the committed tarball holds every seeded
// ConfigMap and namespace exactly once, and nothing else of that type
// but the kube-root-ca.crt a cluster with a node puts in every namespace.
func assertExactlySeeded(t *testing.T, s *stack, backup, prefix string, want map[string]bool) {
	t.Helper()
	assertExactlySeededAt(t, s, s.location, backup, prefix, want)
}

// assertExactlySeededAt is assertExactlySeeded of a backup in another of
// the stack's locations.
func assertExactlySeededAt(t *testing.T, s *stack, locationURL, backup, prefix string, want map[string]bool) {
	t.Helper()
	counts := tarballCountsAt(t, s, locationURL, backup)
	got := counts["configmaps"]
	for key := range got {
		if strings.HasSuffix(key, "/kube-root-ca.crt") {
			delete(got, key)
		}
	}
	require.Len(t, got, len(want), "ConfigMaps in the tarball")
	for key, n := range got {
		assert.True(t, want[key], "unexpected ConfigMap %s", key)
		assert.Equal(t, 1, n, "ConfigMap %s stored %d times", key, n)
	}
	for key, n := range counts["namespaces"] {
		assert.True(t, strings.HasPrefix(key, prefix+"-"), "unexpected namespace %s", key)
		assert.Equal(t, 1, n)
	}
	assert.Len(t, counts["namespaces"], seedNamespaces)
}

func TestBackupResumesAfterWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	want := seedConfigMaps(t, s.cluster.Config(), "wk", seedNamespaces, seedPerNS)
	first := s.startWorker("--page-interval", "100ms")

	ctx := context.Background()
	_, err := s.starter.CreateBackup(ctx, slowBackup("worker-kill", "wk"))
	require.NoError(t, err)
	waitMidConfigMaps(t, s, "worker-kill")
	first.kill()
	killedAt := time.Now()
	s.startWorker("--page-interval", "100ms")

	v := s.waitDone("worker-kill", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %+v", v.Status)
	assertExactlySeeded(t, s, "worker-kill", "wk", want)
	assertPrivateFiles(t, strings.TrimPrefix(location.Display(s.location), "file://")+"/backups/worker-kill")
	// The tarball was spliced from the segments collection stored beside
	// its parts; what assertExactlySeeded read shows the retry left no
	// segment of other items.
	committed := logLines(t, s, "worker-kill", "Committing backup")
	require.Len(t, committed, 1)
	assert.Positive(t, committed[0]["partsFromSegments"], "the tarball should be made of the collection's segments")

	// Collections that finished before the kill ran once, on the first
	// worker; the one of ConfigMaps was cut off and retried, and the
	// retry resumed from its last heartbeat instead of listing from the
	// start.
	runs := collectRuns(t, s, "worker-kill")
	require.Contains(t, runs, "configmaps")
	for gr, r := range runs {
		if r.completed.Before(killedAt) {
			assert.Equal(t, int32(1), r.attempt, "%s finished before the kill but ran %d times", gr, r.attempt)
		}
	}
	assert.Greater(t, runs["configmaps"].attempt, int32(1), "ConfigMaps should have been retried after the kill")
	// A retried collection skipped the types its last heartbeat before
	// the kill counted done (its log line names them): those have no
	// "Collected" line, as the killed worker's lines went with it and the
	// retry did not list them again; every other type was collected once.
	doneBeforeKill := map[string]bool{}
	for _, l := range logLines(t, s, "worker-kill", "Resuming a batch of collections") {
		for _, gr := range l["done"].([]any) {
			doneBeforeKill[gr.(string)] = true
		}
	}
	t.Logf("types done before the kill in the collections cut off: %v", doneBeforeKill)
	collected := map[string]int{}
	for _, l := range logLines(t, s, "worker-kill", "Collected") {
		collected[l["resource"].(string)]++
	}
	for gr := range runs {
		if doneBeforeKill[gr] {
			assert.Zero(t, collected[gr], "%s was done before the kill, yet collected again", gr)
		} else {
			assert.Equal(t, 1, collected[gr], "%s collected %d times", gr, collected[gr])
		}
	}
	resumed := logLines(t, s, "worker-kill", "Resuming collection")
	var configMapsResumed bool
	for _, l := range resumed {
		if l["resource"] == "configmaps" && l["items"].(float64) >= 100 {
			configMapsResumed = true
		}
	}
	assert.True(t, configMapsResumed, "the retried ConfigMaps collection should resume with the items already stored; log lines: %v", resumed)
}

func TestBackupResumesAfterTemporalKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	want := seedConfigMaps(t, s.cluster.Config(), "tk", seedNamespaces, seedPerNS)
	s.startWorker("--page-interval", "100ms")

	_, err := s.starter.CreateBackup(context.Background(), slowBackup("temporal-kill", "tk"))
	require.NoError(t, err)
	waitMidConfigMaps(t, s, "temporal-kill")
	s.temporal.kill()
	killedAt := time.Now()
	time.Sleep(2 * time.Second) // the worker keeps polling a dead server
	s.startTemporal()           // same port, same SQLite file

	v := s.waitDone("temporal-kill", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %+v", v.Status)
	assertExactlySeeded(t, s, "temporal-kill", "tk", want)
	runs := collectRuns(t, s, "temporal-kill")
	require.Contains(t, runs, "configmaps")
	assert.True(t, runs["configmaps"].completed.After(killedAt), "the kill landed mid-step: ConfigMaps were still being collected")
}

func TestCancelDuringCollectionCleansUp(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	seedConfigMaps(t, s.cluster.Config(), "cx", seedNamespaces, seedPerNS)
	worker := s.startWorker("--page-interval", "100ms")

	_, err := s.starter.CreateBackup(context.Background(), slowBackup("canceled", "cx"))
	require.NoError(t, err)
	waitMidConfigMaps(t, s, "canceled")
	// The collection stands still while the cancel is asked for, so the
	// cancel lands mid-collection whatever the machine's speed.
	worker.freeze()
	out, stderr, code := s.cli("backup", "cancel", "canceled")
	worker.thaw()
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Cancel requested")

	v := s.waitDone("canceled", 2*time.Minute)
	assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
	// Only the log stays, so the user can read what happened.
	keys := locationKeys(t, s.location, "canceled")
	assert.Equal(t, []string{"backups/canceled/logs.jsonl.gz"}, keys)

	_, stderr, code = s.cli("backup", "cancel", "canceled")
	assert.Equal(t, starter.ExitConflict, code, "canceling a finished backup is a conflict: %s", stderr)
}

// assertPrivateFiles requires every file under dir to be readable by its
// owner only, and every directory to be open to its owner only: a backup
// holds Secrets.
func assertPrivateFiles(t *testing.T, dir string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		assert.Zero(t, info.Mode().Perm()&0o077, "%s is %v: open to others than its owner", p, info.Mode().Perm())
		if !d.IsDir() {
			files++
		}
		return nil
	}))
	require.NotZero(t, files, "no file under %s", dir)
}
