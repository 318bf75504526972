package tarball

import (
	"errors"
	"io"
	"sync"
)

// preparedChunk is how many entries go to a preparing goroutine at once:
// enough that handing them over costs little, few enough that memory
// stays small (the entries of 2×workers+1 chunks at most are held).
const preparedChunk = 64

// WalkPrepared is WalkWanted with the work on each entry in two parts:
// prepare runs on workers goroutines beside the one that reads and
// decompresses the stream, and use gets every entry's prepared result in
// the tarball's order, on the calling goroutine. want and prepare run on
// other goroutines: they must be safe to call concurrently with each
// other and with use, which may change what the caller holds. The first
// error of prepare or use ends the walk and is returned as WalkWanted
// returns fn's.
func WalkPrepared[T any](r io.Reader, limits Limits, want func(Entry) bool, workers int,
	prepare func(Entry) (T, error), use func(Entry, T) error) (format string, err error) {
	workers = max(workers, 1)
	type chunk struct {
		entries []Entry
		results []T
		// err is prepare's for entries[len(results)].
		err  error
		done chan struct{}
	}
	jobs := make(chan *chunk)
	ordered := make(chan *chunk, 2*workers)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c := range jobs {
				c.results = make([]T, 0, len(c.entries))
				for _, e := range c.entries {
					res, err := prepare(e)
					if err != nil {
						c.err = err
						break
					}
					c.results = append(c.results, res)
				}
				close(c.done)
			}
		})
	}

	var walkErr error
	walked := make(chan struct{})
	go func() {
		defer close(walked)
		defer close(ordered)
		defer close(jobs)
		send := func(c *chunk) bool {
			select {
			case ordered <- c:
			case <-stop:
				return false
			}
			select {
			case jobs <- c:
				return true
			case <-stop:
				close(c.done) // never prepared: the walk is over
				return false
			}
		}
		current := &chunk{done: make(chan struct{})}
		format, walkErr = WalkWanted(r, limits, want, func(e Entry) error {
			current.entries = append(current.entries, e)
			if len(current.entries) < preparedChunk {
				return nil
			}
			if !send(current) {
				return errHalted
			}
			current = &chunk{done: make(chan struct{})}
			return nil
		})
		if walkErr == nil && len(current.entries) > 0 {
			send(current)
		}
	}()

	var useErr error
	for c := range ordered {
		<-c.done
		if useErr != nil {
			continue // draining what the walk sent before it stopped
		}
		for i := 0; useErr == nil && i < len(c.results); i++ {
			useErr = use(c.entries[i], c.results[i])
		}
		if useErr == nil {
			useErr = c.err
		}
		if useErr != nil {
			halt()
		}
	}
	<-walked
	wg.Wait()
	if useErr != nil {
		return format, useErr
	}
	if errors.Is(walkErr, errHalted) {
		return format, nil
	}
	return format, walkErr
}

// errHalted ends a walk whose entries are no longer used.
var errHalted = errors.New("walk halted")
