package store

import (
	"context"
	"io"
	"sync"
)

// segmentsAhead bounds the segments finalize has open at once: the one
// it copies into the tarball and those it asked for after it. On an
// object store a read waits a round trip for its first byte, and the
// tarball of a million objects is 2,000 segments: asked for ahead, the
// waits overlap instead of adding up.
const segmentsAhead = 8

// openedSegment is a segment's reader, or why it could not be opened.
type openedSegment struct {
	r   io.ReadCloser
	err error
}

// segmentOpener opens segments in their order, up to segmentsAhead at
// once, for take to hand out one after another.
type segmentOpener struct {
	ctx    context.Context
	cancel context.CancelFunc
	opened []chan openedSegment // one per key, in order
	room   chan struct{}        // a slot per segment open and not closed
	next   int                  // the next one take hands out
	opens  sync.WaitGroup       // the opening goroutines, and theirs
}

// openSegments starts opening keys with open, in order. Call stop when
// done: it closes what was opened and not taken.
func openSegments(ctx context.Context, open func(context.Context, string) (io.ReadCloser, error), keys []string) *segmentOpener {
	ctx, cancel := context.WithCancel(ctx)
	o := &segmentOpener{ctx: ctx, cancel: cancel, opened: make([]chan openedSegment, len(keys)), room: make(chan struct{}, segmentsAhead)}
	for i := range o.opened {
		o.opened[i] = make(chan openedSegment, 1)
	}
	o.opens.Go(func() {
		for i, key := range keys {
			select {
			case o.room <- struct{}{}:
			case <-ctx.Done():
				return
			}
			o.opens.Go(func() {
				r, err := open(ctx, key)
				o.opened[i] <- openedSegment{r, err}
			})
		}
	})
	return o
}

// take waits for the next segment in order; closing it makes room for
// one more to be opened. Once ctx ends, a segment not asked for yet never
// will be: take returns ctx's error instead.
func (o *segmentOpener) take() (io.ReadCloser, error) {
	var s openedSegment
	select {
	case s = <-o.opened[o.next]:
	case <-o.ctx.Done():
		return nil, o.ctx.Err()
	}
	o.next++
	if s.err != nil {
		<-o.room
		return nil, s.err
	}
	return &roomReleaser{ReadCloser: s.r, room: o.room}, nil
}

// stop ends the opening and closes the segments opened and not taken.
func (o *segmentOpener) stop() {
	o.cancel()
	o.opens.Wait()
	for _, ch := range o.opened[o.next:] {
		select {
		case s := <-ch:
			if s.err == nil {
				_ = s.r.Close() // read only
			}
		default: // never asked for
		}
	}
}

// roomReleaser gives its slot back once closed.
type roomReleaser struct {
	io.ReadCloser
	room chan struct{}
	once sync.Once
}

func (r *roomReleaser) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(func() { <-r.room })
	return err
}
