package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSegments opens a key as a reader of the key's name, and counts the
// readers open.
type fakeSegments struct {
	mu      sync.Mutex
	open    int
	maxOpen int
	closed  map[string]bool
	// gate, when set, holds every open until segmentsAhead are under way.
	gate     chan struct{}
	gateOnce sync.Once
	// fail is a key whose open fails.
	fail string
}

func (f *fakeSegments) opener(ctx context.Context, key string) (io.ReadCloser, error) {
	f.mu.Lock()
	f.open++
	f.maxOpen = max(f.maxOpen, f.open)
	if f.gate != nil && f.open == segmentsAhead {
		f.gateOnce.Do(func() { close(f.gate) })
	}
	f.mu.Unlock()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, fmt.Errorf("never %d segments asked for at once: %w", segmentsAhead, ctx.Err())
		}
	}
	if key == f.fail {
		f.mu.Lock()
		f.open--
		f.mu.Unlock()
		return nil, errors.New("no such segment")
	}
	return &fakeSegment{Reader: strings.NewReader(key), f: f, key: key}, nil
}

type fakeSegment struct {
	io.Reader
	f   *fakeSegments
	key string
}

func (s *fakeSegment) Close() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.open--
	s.f.closed[s.key] = true
	return nil
}

func segmentKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("segments/configmaps/%04d", i)
	}
	return keys
}

// Every open waits until segmentsAhead are under way: opening one after
// another never gets there, and the test's bound (a hang bound, not the
// verdict) fails it.
func TestSegmentsAreAskedForAheadAndHandedOutInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fakeSegments{closed: map[string]bool{}, gate: make(chan struct{})}
	keys := segmentKeys(3 * segmentsAhead)
	o := openSegments(ctx, f.opener, keys)
	for _, key := range keys {
		r, err := o.take()
		require.NoError(t, err)
		data, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, key, string(data), "in order")
		require.NoError(t, r.Close())
	}
	o.stop()
	assert.Equal(t, segmentsAhead, f.maxOpen, "at most segmentsAhead open at once")
	assert.Zero(t, f.open)
	assert.Len(t, f.closed, len(keys))
}

func TestSegmentsOpenedAndNotTakenAreClosed(t *testing.T) {
	f := &fakeSegments{closed: map[string]bool{}}
	keys := segmentKeys(3 * segmentsAhead)
	o := openSegments(context.Background(), f.opener, keys)
	r, err := o.take()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	o.stop()
	assert.Zero(t, f.open, "stop closes what was opened ahead")
	assert.Less(t, len(f.closed), len(keys), "nothing opened past the room it had")
}

func TestASegmentThatCannotBeOpenedIsAnErrorInItsTurn(t *testing.T) {
	f := &fakeSegments{closed: map[string]bool{}}
	keys := segmentKeys(4)
	f.fail = keys[2]
	o := openSegments(context.Background(), f.opener, keys)
	defer o.stop()
	for _, key := range keys[:2] {
		r, err := o.take()
		require.NoError(t, err, key)
		require.NoError(t, r.Close())
	}
	_, err := o.take()
	require.ErrorContains(t, err, "no such segment")
	r, err := o.take()
	require.NoError(t, err, "the failure gives its room back")
	require.NoError(t, r.Close())
}

// Canceled while the segments it holds fill the room, the opener asks
// for no more; the next take returns instead of waiting for a segment
// never asked for.
func TestTakingAfterCancelReturnsTheCancel(t *testing.T) {
	f := &fakeSegments{closed: map[string]bool{}}
	keys := segmentKeys(2 * segmentsAhead)
	ctx, cancel := context.WithCancel(context.Background())
	o := openSegments(ctx, f.opener, keys)
	defer o.stop()
	held := make([]io.ReadCloser, segmentsAhead)
	for i := range held {
		r, err := o.take()
		require.NoError(t, err)
		held[i] = r
	}
	cancel()
	for _, r := range held {
		require.NoError(t, r.Close())
	}
	taken := make(chan error, 1)
	go func() {
		r, err := o.take()
		if err == nil {
			_ = r.Close()
		}
		taken <- err
	}()
	select {
	case err := <-taken:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute): // a hang bound, not the verdict
		t.Fatal("take waits for a segment the canceled opener never asks for")
	}
}
