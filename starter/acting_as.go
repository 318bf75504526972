package starter

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

type actingAsKey struct{}

// WithActingAs returns a context whose runs act as id: every backup,
// restore and schedule the Client starts with it records id, and the
// worker reads and writes the cluster as id (impersonation). The starter
// API sets it from the authenticated caller; without it a run acts as
// the worker, which is Temporal's path, for operators only.
func WithActingAs(ctx context.Context, id *v1alpha1.Identity) context.Context {
	return context.WithValue(ctx, actingAsKey{}, id)
}

// ActingAs is the identity runs started with ctx act as (nil: the worker).
func ActingAs(ctx context.Context) *v1alpha1.Identity {
	id, _ := ctx.Value(actingAsKey{}).(*v1alpha1.Identity)
	return id
}

// actingAsMemo is the memo and search attribute pair that shows in the
// Temporal UI whom a run acts as.
func actingAsMemo(memo map[string]any, id *v1alpha1.Identity) map[string]any {
	if id != nil {
		memo[v1alpha1.MemoActingAs] = id
	}
	return memo
}
