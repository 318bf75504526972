package starter

import (
	"context"
	"slices"

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

// identityOf is the Identity of an authenticated user, copied so that
// nothing a run records aliases the request's user.
func identityOf(u *User) *v1alpha1.Identity {
	id := &v1alpha1.Identity{Username: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	for k, v := range u.Extra {
		if id.Extra == nil {
			id.Extra = make(map[string][]string, len(u.Extra))
		}
		id.Extra[k] = slices.Clone(v)
	}
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
