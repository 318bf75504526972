package datamover

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeartbeatRepeatsTheLatestDetails: a data mover heartbeats while
// kopia reports nothing (opening the repository, say), then with the
// last progress it had, and stops when told.
func TestHeartbeatRepeatsTheLatestDetails(t *testing.T) {
	liveInterval = time.Millisecond
	defer func() { liveInterval = 2 * time.Second }()
	var mu sync.Mutex
	count := map[any]int{}
	seen := func(d any) int { mu.Lock(); defer mu.Unlock(); return count[d] }
	h := beat(func(d any) { mu.Lock(); count[d]++; mu.Unlock() }, "opening")
	require.Eventually(t, func() bool { return seen("opening") >= 3 }, 10*time.Second, time.Millisecond,
		"heartbeats while nothing is reported")
	h.record("1 MiB of 2 MiB")
	require.Eventually(t, func() bool { return seen("1 MiB of 2 MiB") >= 3 }, 10*time.Second, time.Millisecond,
		"then the latest progress, repeated")
	h.stop()
	after := seen("1 MiB of 2 MiB")
	time.Sleep(20 * time.Millisecond) // twenty ticks' worth
	assert.Equal(t, after, seen("1 MiB of 2 MiB"), "no heartbeat after stop")
}
