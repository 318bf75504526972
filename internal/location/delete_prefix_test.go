package location

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func someKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("backups/b/.work/parts/configmaps/%04d", i)
	}
	return keys
}

// Each delete waits until deletesInFlight of them are under way: one
// delete at a time never gets there, and the test's bound (a hang
// bound, not the verdict) fails it.
func TestDeletePrefixHasSeveralDeletesUnderWay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := someKeys(3 * deletesInFlight)
	var (
		mu          sync.Mutex
		inFlight    int
		maxInFlight int
		deleted     = map[string]int{}
	)
	full := make(chan struct{})
	del := func(ctx context.Context, key string) error {
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		if inFlight == deletesInFlight {
			select {
			case <-full:
			default:
				close(full)
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		select {
		case <-full:
		case <-ctx.Done():
			return fmt.Errorf("never %d deletes under way at once: %w", deletesInFlight, ctx.Err())
		}
		mu.Lock()
		deleted[key]++
		mu.Unlock()
		return nil
	}
	var counts []int
	require.NoError(t, deleteAll(ctx, keys, del, func(n int) { counts = append(counts, n) }))
	assert.Equal(t, deletesInFlight, maxInFlight, "at most deletesInFlight at once")
	assert.Len(t, deleted, len(keys))
	for key, n := range deleted {
		assert.Equal(t, 1, n, "%s deleted once", key)
	}
	require.Len(t, counts, len(keys), "progress hears every delete")
	for i, n := range counts {
		assert.Equal(t, i+1, n, "progress counts up, one call at a time")
	}
}

func TestDeletePrefixStopsAtTheFirstFailure(t *testing.T) {
	keys := someKeys(10 * deletesInFlight)
	refused := errors.New("access denied")
	var (
		mu    sync.Mutex
		tried int
	)
	// The other deletes hold until the failure ends them: the slots fill
	// before it, whatever the order the deletes run in.
	del := func(ctx context.Context, key string) error {
		mu.Lock()
		tried++
		mu.Unlock()
		if key == keys[0] {
			return refused
		}
		<-ctx.Done()
		return ctx.Err()
	}
	err := deleteAll(context.Background(), keys, del, nil)
	require.ErrorIs(t, err, refused)
	assert.LessOrEqual(t, tried, deletesInFlight+1, "no delete starts once one failed")
}

func TestDeletePrefixDeletesEveryObjectOfAFileLocation(t *testing.T) {
	ctx := context.Background()
	loc := openTemp(t)
	keys := someKeys(2*deletesInFlight + 3)
	for _, k := range keys {
		require.NoError(t, loc.WriteAll(ctx, k, []byte("x")))
	}
	require.NoError(t, loc.WriteAll(ctx, "backups/b/backup.json", []byte("{}")))
	last := 0
	require.NoError(t, loc.DeletePrefix(ctx, "backups/b/.work/", func(n int) { last = n }))
	assert.Equal(t, len(keys), last)
	left, err := loc.keys(ctx, "backups/b/", true)
	require.NoError(t, err)
	assert.Equal(t, []string{"backups/b/backup.json"}, left, "only what is outside the prefix is left")
}
