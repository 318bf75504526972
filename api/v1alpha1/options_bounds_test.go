package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOptionsOutOfBoundsNameTheirField(t *testing.T) {
	assert.Empty(t, BackupOptions{}.Problems(), "unset options take defaults")
	assert.Empty(t, RestoreOptions{}.Problems())
	assert.Empty(t, BackupOptions{PageSize: maxPageSize, Concurrency: 1, HeartbeatTimeout: dur(3 * time.Second)}.Problems())

	got := BackupOptions{PageSize: -1, Concurrency: 1000, VolumeConcurrency: -2,
		HeartbeatTimeout: dur(0), ClusterUnreachableTimeout: dur(-time.Second)}.Problems()
	assert.Equal(t, []string{
		"options.pageSize -1 must be between 1 and 10000 (0 or unset: 500)",
		"options.concurrency 1000 must be between 1 and 64 (0 or unset: 4)",
		"options.volumeConcurrency -2 must be between 1 and 64 (0 or unset: 4)",
		"options.clusterUnreachableTimeout -1s must be between 1s and 24h0m0s",
		"options.heartbeatTimeout 0s must be between 3s and 10m0s",
	}, got)

	got = RestoreOptions{BatchSize: maxBatchSize + 1, Concurrency: -1, CRDEstablishTimeout: dur(2 * time.Hour),
		HeartbeatTimeout: dur(-time.Minute)}.Problems()
	assert.Equal(t, []string{
		"options.concurrency -1 must be between 1 and 256 (0 or unset: 16)",
		"options.batchSize 5001 must be between 1 and 5000 (0 or unset: 200)",
		"options.crdEstablishTimeout 2h0m0s must be between 1s and 1h0m0s",
		"options.heartbeatTimeout -1m0s must be between 3s and 10m0s",
	}, got)
}
