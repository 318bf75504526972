package tick

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnCallsOnEveryTickUntilStopped: the test drives the ticks; each
// gives one call, and after stop no tick is taken.
func TestOnCallsOnEveryTickUntilStopped(t *testing.T) {
	ticks := make(chan time.Time)
	calls := make(chan struct{}, 1)
	stop := On(ticks, func() { calls <- struct{}{} })
	for range 3 {
		ticks <- time.Now()
		<-calls
	}
	stop()
	select {
	case ticks <- time.Now():
		require.Fail(t, "a tick was taken after stop")
	default:
	}
	assert.Empty(t, calls, "no call after stop")
}

func TestStopTwiceIsFine(t *testing.T) {
	stop := Every(time.Hour, func() {})
	stop()
	assert.NotPanics(t, stop)
}
