package clock

import "time"

// Every calls fn every d in a goroutine of its own until stop is called;
// stop returns once fn no longer runs.
func Every(d time.Duration, fn func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(done); <-exited }
}
