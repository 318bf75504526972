package datamover

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestHeartbeatRepeatsTheLatestDetails: a data mover heartbeats while
// kopia reports nothing (opening the repository, say), with the last
// progress it had, and stops when told.
func TestHeartbeatRepeatsTheLatestDetails(t *testing.T) {
	liveInterval = 20 * time.Millisecond
	defer func() { liveInterval = 2 * time.Second }()
	var mu sync.Mutex
	count := map[any]int{}
	h := beat(context.Background(), func(d any) { mu.Lock(); count[d]++; mu.Unlock() }, "opening")
	time.Sleep(200 * time.Millisecond) // nothing reported meanwhile
	h.record("1 MiB of 2 MiB")
	time.Sleep(200 * time.Millisecond)
	h.stop()
	mu.Lock()
	after := count["1 MiB of 2 MiB"]
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	assert.Greater(t, count["opening"], 2, "heartbeats while nothing is reported: %v", count)
	assert.Greater(t, count["1 MiB of 2 MiB"], 2, "then the latest progress, repeated: %v", count)
	assert.Equal(t, after, count["1 MiB of 2 MiB"], "no heartbeat after stop")
}
