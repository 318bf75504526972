package httpapi

import (
	"crypto/sha256"
	"sync"
	"time"
)

// reviewCache keeps answers of the cluster for a few seconds, so a
// client polling a run does not cost a TokenReview and a
// SubjectAccessReview per request. Entries are keyed by a digest, never by
// the token itself, and the cache is bounded.
type reviewCache[V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry[V]
}

type cacheEntry[V any] struct {
	value   V
	expires time.Time
}

func newReviewCache[V any](ttl time.Duration, max int) *reviewCache[V] {
	return &reviewCache[V]{ttl: ttl, max: max, now: time.Now, entries: map[[sha256.Size]byte]cacheEntry[V]{}}
}

func (c *reviewCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sha256.Sum256([]byte(key))]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *reviewCache[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	if len(c.entries) >= c.max {
		return // full of live answers: ask the cluster again
	}
	c.entries[sha256.Sum256([]byte(key))] = cacheEntry[V]{value: v, expires: now.Add(c.ttl)}
}
