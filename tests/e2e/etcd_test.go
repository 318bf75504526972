package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestEtcdSnapshots snapshots the sandbox's own etcd: stored, verified,
// listed, pruned by a schedule's retention, expired, deleted; and a
// worker without etcd endpoints fails a snapshot with a clear reason and
// leaves nothing behind.
func TestEtcdSnapshots(t *testing.T) {
	t.Parallel()
	// Its own cluster: a snapshot reads the whole of etcd.
	s := newStack(t)
	key := s.useEncryptionKey(newKey(t))
	// Short heartbeats: a killed worker's step is retried within seconds.
	startWorker := func() *proc {
		return s.startWorker("--location", s.location, "--etcd-endpoints", s.cluster.EtcdEndpoint(), "--encryption-key", key,
			"--datamover-encryption-key-secret", "cairn-encryption-key", "--heartbeat-timeout", "5s")
	}
	worker := startWorker()
	ctx := context.Background()

	t.Run("a snapshot is stored, verified and listed", func(t *testing.T) {
		stdout, stderr, code := s.cli("etcd-snapshot", "create", "snap-1", "--wait", "-o", "json")
		require.Equal(t, 0, code, stderr)
		var v starter.EtcdSnapshotView
		require.NoError(t, json.Unmarshal([]byte(stdout), &v))
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
		st := v.Status
		require.NotNil(t, st)
		assert.True(t, st.Verified)
		assert.Positive(t, st.Revision)
		assert.NotEmpty(t, st.EtcdVersion)

		// Check the stored copy independently: its hash, and etcd's
		// trailer (the SHA-256 of the database bytes before it).
		data := readLocation(t, s, location.EtcdSnapshot("snap-1").Snapshot())
		require.Equal(t, st.Bytes, int64(len(data)))
		sum := sha256.Sum256(data)
		assert.Equal(t, st.SHA256, hex.EncodeToString(sum[:]))
		body, trailer := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
		bodySum := sha256.Sum256(body)
		assert.True(t, bytes.Equal(bodySum[:], trailer), "etcd's integrity trailer matches the stored data")
		assertSealed(t, s, location.EtcdSnapshot("snap-1").Snapshot())
		var meta v1alpha1.EtcdSnapshotMetadata
		require.NoError(t, json.Unmarshal(readLocation(t, s, location.EtcdSnapshot("snap-1").Metadata()), &meta))
		assert.Equal(t, s.locations.KeyID(), meta.EncryptionKeyID)

		recordHistory(t, s, v1alpha1.EtcdSnapshotWorkflowID("snap-1"), "etcd_snapshot_completed.json")
		stdout, _, code = s.cli("etcd-snapshot", "list")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "snap-1")
		_, stderr, code = s.cli("etcd-snapshot", "create", "snap-1")
		assert.Equal(t, starter.ExitConflict, code, stderr)
		_, _, code = s.cli("etcd-snapshot", "create", "Bad_Name")
		assert.Equal(t, starter.ExitInvalid, code)
	})

	t.Run("Temporal killed while a snapshot is taken: it completes, verified", func(t *testing.T) {
		id := ""
		for i := 1; i <= stepKillTries && id == ""; i++ {
			name := fmt.Sprintf("snap-tk-%d", i)
			res, err := s.starter.CreateEtcdSnapshot(ctx, v1alpha1.EtcdSnapshotSpec{Name: name})
			require.NoError(t, err)
			if catchActivity(t, s, worker, res.WorkflowID, takeEtcdSnapshotActivity) {
				id = res.WorkflowID
			}
		}
		require.NotEmpty(t, id, "the worker was never frozen inside %s", takeEtcdSnapshotActivity)
		s.temporal.kill()
		killedAt := time.Now()
		worker.thaw()
		s.startTemporal() // same port, same SQLite file

		require.NoError(t, s.starter.WaitRun(ctx, id, ""))
		v, err := s.starter.GetEtcdSnapshot(ctx, strings.TrimPrefix(id, "etcd-snapshot/"))
		require.NoError(t, err)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
		assert.True(t, v.Status.Verified)
		assert.True(t, activityCompletedAt(t, s, id, takeEtcdSnapshotActivity).After(killedAt),
			"the kill landed mid-step: the snapshot was taken after it")
	})

	t.Run("the worker killed while a snapshot is taken: the next takes it again, verified", func(t *testing.T) {
		var name string
		catchInNewRun(t, s, worker, takeEtcdSnapshotActivity, func(try int) string {
			name = fmt.Sprintf("snap-wk-%d", try)
			res, err := s.starter.CreateEtcdSnapshot(ctx, v1alpha1.EtcdSnapshotSpec{Name: name})
			require.NoError(t, err)
			return res.WorkflowID
		})
		worker.kill()
		worker = startWorker()

		id := v1alpha1.EtcdSnapshotWorkflowID(name)
		require.NoError(t, s.starter.WaitRun(ctx, id, ""))
		v, err := s.starter.GetEtcdSnapshot(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
		assert.True(t, v.Status.Verified)
		assert.Greater(t, activityAttempt(t, s, id, takeEtcdSnapshotActivity), int32(1), "the kill landed mid-step: the snapshot was taken again")
		data := readLocation(t, s, location.EtcdSnapshot(name).Snapshot())
		sum := sha256.Sum256(data)
		assert.Equal(t, v.Status.SHA256, hex.EncodeToString(sum[:]), "the stored copy is the one the status describes")
	})

	t.Run("a schedule of etcd snapshots keeps the newest", func(t *testing.T) {
		_, stderr, code := s.cli("schedule", "create", "etcd-daily", "--kind", "etcd-snapshot", "--cron", "@daily", "--keep-last", "1")
		require.Equal(t, 0, code, stderr)
		sch := &schedules{s: s}
		sch.runOnce("etcd-daily")
		second := sch.runOnce("etcd-daily")
		v := sch.get("etcd-daily")
		require.Len(t, v.Backups, 1, "%+v", v.Backups)
		assert.Equal(t, second, v.Backups[0].Name, "the older snapshot was pruned")
		var meta v1alpha1.EtcdSnapshotMetadata
		require.NoError(t, json.Unmarshal(readLocation(t, s, location.EtcdSnapshot(second).Metadata()), &meta))
		assert.Equal(t, "etcd-daily", meta.Spec.Schedule)
		assert.True(t, meta.Status.Verified)
	})

	t.Run("expired and deleted snapshots go", func(t *testing.T) {
		_, stderr, code := s.cli("etcd-snapshot", "create", "short-lived", "--ttl", "1s", "--wait")
		require.Equal(t, 0, code, stderr)
		time.Sleep(time.Second)
		require.NoError(t, s.temporalC.ScheduleClient().GetHandle(ctx, v1alpha1.ExpireScheduleID).Trigger(ctx, client.ScheduleTriggerOptions{}))
		until(t, func() bool { return !etcdListed(t, s)["short-lived"] }, time.Minute, 300*time.Millisecond)
		assert.True(t, etcdListed(t, s)["snap-1"], "a snapshot that has not expired stays")

		_, stderr, code = s.cli("etcd-snapshot", "delete", "snap-1", "--wait")
		require.Equal(t, 0, code, stderr)
		assert.False(t, etcdListed(t, s)["snap-1"])
		assert.Empty(t, etcdSnapshotKeys(t, s, "snap-1"))
	})

	t.Run("a worker without etcd endpoints fails the snapshot clearly", func(t *testing.T) {
		worker.stop()
		s.startWorker("--location", s.location)
		stdout, _, code := s.cli("etcd-snapshot", "create", "no-etcd", "--wait")
		assert.Equal(t, starter.ExitFailed, code)
		assert.Contains(t, stdout, "--etcd-endpoints")
		assert.Empty(t, etcdSnapshotKeys(t, s, "no-etcd"), "nothing is left of a failed snapshot")
	})
}

func etcdListed(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	list, err := s.starter.ListEtcdSnapshots(context.Background())
	require.NoError(t, err)
	names := map[string]bool{}
	for _, v := range list.Items {
		names[v.Name] = true
	}
	return names
}

func readLocation(t *testing.T, s *stack, key string) []byte {
	t.Helper()
	loc, err := s.locations.Open(context.Background(), s.location)
	require.NoError(t, err)
	defer loc.Close()
	data, err := loc.ReadAll(context.Background(), key)
	require.NoError(t, err)
	return data
}

// etcdSnapshotKeys lists every object under an etcd snapshot's folder.
func etcdSnapshotKeys(t *testing.T, s *stack, name string) []string {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), s.location)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.EtcdSnapshot(name).Prefix())
	require.NoError(t, err)
	return keys
}
