package etcd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
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
