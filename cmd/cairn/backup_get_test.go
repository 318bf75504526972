package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestDescribeShowsPodVolumeCopies: a pod volume's copy reads as what it
// is, where it was taken and how consistent, beside a snapshot.
func TestDescribeShowsPodVolumeCopies(t *testing.T) {
	var out bytes.Buffer
	operationsTable(&out, []v1alpha1.Operation{
		{ID: "snapshot/shop/db", Kind: v1alpha1.OperationKindCSISnapshot, Phase: v1alpha1.OperationCompleted,
			Snapshot: &v1alpha1.SnapshotInfo{Name: "db-b1-0123456789", Handle: "h1", RestoreBytes: 1024}},
		{ID: "fs-backup/shop/web/cache", Kind: v1alpha1.OperationKindPodVolumeBackup, Phase: v1alpha1.OperationCompleted,
			Volume: v1alpha1.Volume{Namespace: "shop", PodVolume: &v1alpha1.PodVolume{Pod: "web", Volume: "cache", Node: "node-1",
				Source: "emptyDir", Consistency: v1alpha1.ConsistencyHooks}},
			Upload: &v1alpha1.DataUploadInfo{SnapshotID: "k1", Bytes: 3 << 20, Files: 12, UploadedBytes: 1 << 20, Duration: 2 * time.Second, Attempts: 2}},
	})
	text := out.String()
	assert.Contains(t, text, "db-b1-0123456789 (h1)")
	assert.Contains(t, text, "file-system copy of emptyDir volume cache on node-1, quiesced by the pod's hooks")
	assert.Contains(t, text, "kopia k1: 3.0 MiB in 12 files, 1.0 MiB uploaded in 2s (2 data movers)")
}
