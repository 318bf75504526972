// Package clock holds the one way cairn's activities and servers wait: a
// sleep that ends early when its context does.
package clock

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends (then it returns ctx's error).
// A d of zero or less returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
