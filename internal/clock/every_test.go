package clock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestEveryTicksUntilStopped: fn runs on every tick, and never once stop
// has returned.
func TestEveryTicksUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := Every(10*time.Millisecond, func() { n.Add(1) })
	time.Sleep(100 * time.Millisecond)
	stop()
	at := n.Load()
	time.Sleep(50 * time.Millisecond)
	assert.Greater(t, at, int32(2))
	assert.Equal(t, at, n.Load(), "no call after stop")
}
