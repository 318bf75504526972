package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/workflows"
)

// TestDataMovement moves snapshot data into the location's kopia
// repository with real data mover processes, real kopia and the sandbox's
// real CSI sidecars.
func TestDataMovement(t *testing.T) {
	m := newMoverStack(t)
	m.startMoverWorker()
	ctx := context.Background()

	t.Run("upload, incremental re-upload, byte-identical data, nothing left behind", func(t *testing.T) {
		makeClaims(t, m.stack, "dm", "data")
		want := fillVolume(t, m.stack, "dm", "data", datatree.Spec{LargeFiles: 2, LargeSize: 8 << 20, SmallFiles: 2000, SmallSize: 4096, Seed: 11})

		m.backup(workflows.BackupSpec{Name: "dm-1", IncludedNamespaces: []string{"dm"}, SnapshotMoveData: true,
			NativeSnapshots: workflows.NativeSnapshotsDelete})
		v, err := m.starter.GetBackup(ctx, "dm-1")
		require.NoError(t, err)
		assert.Equal(t, workflows.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		op := operation(t, v.Status, "dm", "data")
		assert.Equal(t, workflows.OperationKindDataUpload, op.Kind)
		up := uploadOf(t, v.Status, "dm", "data")
		assert.NotEmpty(t, up.SnapshotID)
		assert.Empty(t, up.ParentID, "the volume's first upload has no parent")
		assert.EqualValues(t, 2000+2+1, up.Files)
		assert.Equal(t, 1, up.Attempts)
		assert.Greater(t, up.UploadedBytes, int64(16<<20), "the random data was uploaded")
		require.NotNil(t, op.Snapshot)
		assert.True(t, op.Snapshot.Deleted, "nativeSnapshots delete removes the snapshot once the data is moved")
		snaps, _ := backupSnapshots(t, m.stack, "dm-1")
		assert.Empty(t, snaps)

		var volumes workflows.VolumesFile
		require.NoError(t, json.Unmarshal(readLocation(t, m.stack, "backups/dm-1/volumes.json"), &volumes))
		require.Len(t, volumes.Volumes, 1)
		require.NotNil(t, volumes.Volumes[0].Upload)
		assert.Equal(t, up.SnapshotID, volumes.Volumes[0].Upload.SnapshotID)
		assert.NotEmpty(t, logLines(t, m.stack, "dm-1", "Volume data uploaded"), "the data mover's lines are in the backup's log")

		assert.Empty(t, datatree.Diff(want, m.restoredDigest(t, up.SnapshotID), 10), "the repository holds the volume byte for byte")
		m.assertNoDataMoverLeftovers(t)

		m.backup(workflows.BackupSpec{Name: "dm-2", IncludedNamespaces: []string{"dm"}, SnapshotMoveData: true})
		v2, err := m.starter.GetBackup(ctx, "dm-2")
		require.NoError(t, err)
		up2 := uploadOf(t, v2.Status, "dm", "data")
		assert.Equal(t, up.SnapshotID, up2.ParentID, "the second backup is incremental to the first")
		assert.Less(t, up2.UploadedBytes, up.UploadedBytes/20, "unchanged data is not uploaded again")
		m.assertNoDataMoverLeftovers(t)
	})
}
