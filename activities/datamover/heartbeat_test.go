package datamover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeartbeatRepeatsTheLatestDetails: a data mover heartbeats while
// kopia reports nothing (opening the repository, say), with the last
// progress it had, and stops when told. The test drives the ticks itself.
func TestHeartbeatRepeatsTheLatestDetails(t *testing.T) {
	sent := make(chan any, 1)
	ticks := make(chan time.Time)
	h := beat(func(d any) { sent <- d }, "opening", ticks)
	assert.Equal(t, "opening", <-sent, "the first heartbeat goes at once")

	tick := func() any {
		ticks <- time.Now()
		return <-sent
	}
	assert.Equal(t, "opening", tick(), "heartbeats while nothing is reported")
	assert.Equal(t, "opening", tick())
	h.record("1 MiB of 2 MiB")
	assert.Equal(t, "1 MiB of 2 MiB", <-sent, "a report is sent at once")
	assert.Equal(t, "1 MiB of 2 MiB", tick(), "then repeated on every tick")
	assert.Equal(t, "1 MiB of 2 MiB", tick())

	h.stop()
	select {
	case ticks <- time.Now():
		require.Fail(t, "a tick was taken after stop")
	default:
	}
	assert.Empty(t, sent, "no heartbeat after stop")
}
