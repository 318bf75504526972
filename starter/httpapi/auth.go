package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// User is whom a request comes from, as the cluster knows them.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Access is what a request asks to do, in the terms of a Kubernetes
// SubjectAccessReview: a verb on a resource of v1alpha1.APIGroup (in a namespace,
// or cluster-wide when Namespace is empty), or a verb on a URL path.
type Access struct {
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is set for a non-resource URL such as /metrics.
	Path string
}

func (a Access) String() string {
	if a.Path != "" {
		return a.Verb + " " + a.Path
	}
	s := a.Verb + " " + a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	s += "." + v1alpha1.APIGroup
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		return s + " in namespace " + a.Namespace
	}
	return s + " cluster-wide"
}

// Auth says who a bearer token is and what they may do. A Handler serves
// no route without it except those in AnonymousPaths.
type Auth struct {
	// Authenticate returns the token's user, or a starter.UnauthenticatedError.
	Authenticate func(ctx context.Context, token string) (*User, error)
	// Authorize says whether user may do what access names, and if not,
	// why (the cluster's reason, possibly empty).
	Authorize func(ctx context.Context, user *User, access Access) (allowed bool, reason string, err error)
	// AnonymousPaths are served without a token: some of /healthz,
	// /metrics and /openapi.json.
	AnonymousPaths []string
	// ActAsCaller makes every run a request starts act as its
	// authenticated caller (Kubernetes impersonation): set where
	// Authenticate returns identities the cluster knows (TokenReview).
	ActAsCaller bool
	// HomeNamespace is cairn's own namespace, whose resources act for the
	// cluster: the paths under /v1/namespaces/{namespace} refuse it, since
	// their runs would take names of its resources. Runs for the cluster
	// are started under /v1/backups and the like.
	HomeNamespace string
}

// AnonymousPathChoices are the paths Auth.AnonymousPaths may hold.
var AnonymousPathChoices = []string{"/healthz", "/metrics", "/openapi.json"}

type userKey struct{}

func withUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// userFrom is the authenticated user of a request's context, or nil.
func userFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

func userName(ctx context.Context) string {
	if u := userFrom(ctx); u != nil {
		return u.Name
	}
	return ""
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// guarded serves a route to callers the route's access allows. A route
// with a body access check (creates) authenticates here and authorizes
// once its body is decoded.
func (h *handler) guarded(rt route) http.HandlerFunc {
	if slices.Contains(h.auth.AnonymousPaths, rt.path()) {
		return rt.serve
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if h.auth.Authenticate == nil || h.auth.Authorize == nil {
			h.fail(w, r, &starter.UnauthenticatedError{Message: "this API has no authentication configured"})
			return
		}
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			h.fail(w, r, &starter.UnauthenticatedError{Message: "a bearer token is required (Authorization: Bearer <token>)"})
			return
		}
		user, err := h.auth.Authenticate(r.Context(), token)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn", error="invalid_token"`)
			h.fail(w, r, err)
			return
		}
		ctx := withUser(r.Context(), user)
		if h.auth.ActAsCaller {
			ctx = starter.WithActingAs(ctx, identityOf(user))
		}
		ns := r.PathValue("namespace")
		if ns != "" {
			if err := h.namespaceProblem(ns); err != nil {
				h.fail(w, r, err)
				return
			}
			ctx = starter.WithNamespace(ctx, ns)
		}
		if rt.access != nil {
			a := *rt.access
			a.Name, a.Namespace = ownName(ns, r.PathValue("name")), ns
			if err := h.authorize(ctx, a); err != nil {
				h.fail(w, r, err)
				return
			}
		}
		rt.serve(w, r.WithContext(ctx))
	}
}

// namespaceProblem says why the paths of namespace ns serve nothing.
func (h *handler) namespaceProblem(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return &starter.InvalidError{Problems: []string{fmt.Sprintf("namespace %q in the path: %s", ns, strings.Join(msgs, "; "))}}
	}
	if ns == h.auth.HomeNamespace {
		return &starter.InvalidError{Problems: []string{fmt.Sprintf("namespace %s is cairn's own, whose runs are the cluster's: "+
			"use the paths without a namespace (/v1/backups, ...)", ns)}}
	}
	return nil
}

// authorize returns a starter.ForbiddenError unless the context's user may do
// what access names.
func (h *handler) authorize(ctx context.Context, access Access) error {
	user := userFrom(ctx)
	if user == nil {
		return &starter.UnauthenticatedError{Message: "no authenticated user"}
	}
	allowed, reason, err := h.auth.Authorize(ctx, user, access)
	if err != nil {
		return fmt.Errorf("authorize %s: %w", user.Name, err)
	}
	if !allowed {
		h.log.Info("Request forbidden", zap.String("user", user.Name), zap.Stringer("access", access), zap.String("reason", reason))
		msg := fmt.Sprintf("%s may not %s", user.Name, access)
		if reason != "" {
			msg += ": " + reason
		}
		return &starter.ForbiddenError{Message: msg}
	}
	return nil
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
