package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// fakeSnapshot is data followed by its SHA-256, as etcd streams it.
func fakeSnapshot(data []byte) ([]byte, string) {
	trailer := sha256.Sum256(data)
	snap := append(append([]byte(nil), data...), trailer[:]...)
	whole := sha256.Sum256(snap)
	return snap, hex.EncodeToString(whole[:])
}

func TestVerify(t *testing.T) {
	snap, sum := fakeSnapshot(bytes.Repeat([]byte("bolt"), 10000))
	assert.NoError(t, Verify(bytes.NewReader(snap), int64(len(snap)), sum))

	corrupt := append([]byte(nil), snap...)
	corrupt[100] ^= 1
	assert.ErrorContains(t, Verify(bytes.NewReader(corrupt), int64(len(corrupt)), sum), "sha256")

	// Consistent with the streamed hash but not with etcd's trailer: the
	// stream itself was damaged before it was hashed.
	reTrailed := append([]byte(nil), snap...)
	reTrailed[5] ^= 1
	whole := sha256.Sum256(reTrailed)
	assert.ErrorContains(t, Verify(bytes.NewReader(reTrailed), int64(len(reTrailed)), hex.EncodeToString(whole[:])), "integrity trailer")

	assert.ErrorContains(t, Verify(bytes.NewReader(snap[:len(snap)-1]), int64(len(snap)), sum), "trailer")
	assert.ErrorContains(t, Verify(bytes.NewReader(append(snap, 'x')), int64(len(snap)), sum), "1 bytes more")
	assert.ErrorContains(t, Verify(bytes.NewReader(nil), 10, sum), "too short")
}

// TestVerifyEtcdSnapshotHeartbeatsTheBytesRead: reading a stored snapshot
// back heartbeats the bytes read as it goes (the SDK passes on at most one
// per throttle interval), so a large one outlives the heartbeat timeout
// and a stalled read does not.
func TestVerifyEtcdSnapshotHeartbeatsTheBytesRead(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	snap, sum := fakeSnapshot(bytes.Repeat([]byte("bolt"), 1<<18))
	loc, err := location.OpenPlain(ctx, url)
	require.NoError(t, err)
	require.NoError(t, loc.WriteAll(ctx, location.EtcdSnapshot("s1").Snapshot(), snap))
	require.NoError(t, loc.Close())

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Log: zap.NewNop()}
	env.RegisterActivity(a.VerifyEtcdSnapshot)
	var beats []int64
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var n int64
		require.NoError(t, details.Get(&n))
		beats = append(beats, n)
	})
	_, err = env.ExecuteActivity(a.VerifyEtcdSnapshot, v1alpha1.VerifyEtcdSnapshotInput{
		Spec: v1alpha1.EtcdSnapshotSpec{Name: "s1", StorageLocation: url}, Bytes: int64(len(snap)), SHA256: sum})
	require.NoError(t, err)
	require.NotEmpty(t, beats, "verifying heartbeats")
	for _, n := range beats {
		assert.True(t, n > 0 && n <= int64(len(snap)), "a heartbeat counts the bytes read so far: %d", n)
	}
}
