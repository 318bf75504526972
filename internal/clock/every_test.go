package clock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryTicksUntilStopped: fn runs on every tick, and never once stop
// has returned.
func TestEveryTicksUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := Every(time.Millisecond, func() { n.Add(1) })
	require.Eventually(t, func() bool { return n.Load() >= 3 }, 10*time.Second, time.Millisecond, "it ticks")
	stop()
	at := n.Load()
	time.Sleep(20 * time.Millisecond) // twenty ticks' worth
	assert.Equal(t, at, n.Load(), "no call after stop")
}
