// Package tick calls a function on a steady beat until told to stop:
// the heartbeats that say a long step lives, and periodic progress.
package tick

import (
	"sync"
	"time"
)

// Every calls fn every d until stop is called; once stop returns, fn is
// not called again.
func Every(d time.Duration, fn func()) (stop func()) {
	t := time.NewTicker(d)
	stopBeats := On(t.C, fn)
	return func() { stopBeats(); t.Stop() }
}

// On calls fn for every value of ticks until stop is called; once stop
// returns, fn is not called again and no tick is taken. stop may be
// called again (a deferred stop after an early one). Tests drive ticks
// themselves.
func On(ticks <-chan time.Time, fn func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-ticks:
				fn()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }); <-exited }
}
