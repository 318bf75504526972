package location

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListingSurvivesConcurrentDeletes: a file location walks its tree
// to list, so deleting files under the walk (what a run's cleanup does
// while another lists the backups) must not fail the listing.
func TestListingSurvivesConcurrentDeletes(t *testing.T) {
	ctx := context.Background()
	loc, err := OpenPlain(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	var keys []string
	for i := range 100 {
		for j := range 20 {
			key := fmt.Sprintf("backups/run-%03d/.logs/chunk-%02d", i, j)
			require.NoError(t, loc.WriteAll(ctx, key, []byte("x")))
			keys = append(keys, key)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(done)
		for _, k := range keys {
			_ = loc.Delete(ctx, k)
		}
	}()
	for {
		select {
		case <-done:
			wg.Wait()
			return
		default:
		}
		_, err := loc.DirsStartingWith(ctx, BackupsPrefix(), "run-")
		require.NoError(t, err)
		_, err = loc.Keys(ctx, BackupsPrefix())
		require.NoError(t, err)
	}
}
