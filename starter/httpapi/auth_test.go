package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// fakeAuth knows tokens by user name and allows each user what grants
// lists for it, written as Access.String() writes it.
type fakeAuth struct {
	grants map[string][]string
}

func (f fakeAuth) auth(anonymous ...string) Auth {
	return Auth{
		Authenticate: func(_ context.Context, token string) (*User, error) {
			if _, ok := f.grants[token]; !ok {
				return nil, &starter.UnauthenticatedError{Message: "unknown token"}
			}
			return &User{Name: token}, nil
		},
		Authorize: func(_ context.Context, u *User, a Access) (bool, string, error) {
			for _, g := range f.grants[u.Name] {
				if g == a.String() {
					return true, "", nil
				}
			}
			return false, "no rule", nil
		},
		AnonymousPaths: anonymous,
	}
}

// authedHandler is the API for tests of other things: every request
// comes with the token of a user allowed everything.
func authedHandler(c *starter.Client) http.Handler {
	h := Handler(c, zap.NewNop(), Auth{
		Authenticate: func(context.Context, string) (*User, error) { return &User{Name: "test"}, nil },
		Authorize:    func(context.Context, *User, Access) (bool, string, error) { return true, "", nil },
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer test")
		h.ServeHTTP(w, r)
	})
}

func call(t *testing.T, h http.Handler, method, path, token, body string) (int, errorBody) {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var e errorBody
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e
}

// Every route but the configured anonymous paths answers 401 without a
// valid token, before anything reaches Temporal (the mock fails the test
// on any call).
func TestEveryRouteNeedsAToken(t *testing.T) {
	h := Handler(starter.New(mocks.NewClient(t), starter.Options{DefaultLocation: "mem://"}), zap.NewNop(), fakeAuth{}.auth("/openapi.json"))
	for _, rt := range newHandler(starter.New(nil, starter.Options{}), nil).routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.NewReplacer("{name}", "b1", "{namespace}", "team-a").Replace(path)
		code, e := call(t, h, method, path, "", "")
		if path == "/openapi.json" {
			assert.Equal(t, http.StatusOK, code, "an anonymous path is served without a token")
			continue
		}
		assert.Equal(t, http.StatusUnauthorized, code, rt.pattern)
		assert.Equal(t, "Unauthorized", e.Type, rt.pattern)
		code, _ = call(t, h, method, path, "stolen", "")
		assert.Equal(t, http.StatusUnauthorized, code, "%s with a token the cluster does not know", rt.pattern)
	}
}

// Each route asks for its own access, named in the 403 so an admin knows
// which rule to add.
func TestRoutesAskForTheirAccess(t *testing.T) {
	users := fakeAuth{grants: map[string][]string{"viewer": {"list backups.cairn.io cluster-wide", "get backups/log.cairn.io b1 cluster-wide"}}}
	tc := mocks.NewClient(t)
	h := Handler(starter.New(tc, starter.Options{DefaultLocation: "mem://"}), zap.NewNop(), users.auth())
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/v1/backups/b1", "viewer may not get backups.cairn.io b1 cluster-wide: no rule"},
		{http.MethodDelete, "/v1/backups/b1", "may not delete backups.cairn.io b1 cluster-wide"},
		{http.MethodPost, "/v1/backups/b1/cancel", "may not update backups.cairn.io b1 cluster-wide"},
		{http.MethodGet, "/v1/restores/r1/logs", "may not get restores/log.cairn.io r1 cluster-wide"},
		{http.MethodPost, "/v1/schedules/s1/trigger", "may not update schedules.cairn.io s1 cluster-wide"},
		{http.MethodPost, "/v1/etcd-snapshots", "may not create etcdsnapshots.cairn.io cluster-wide"},
		{http.MethodGet, "/metrics", "may not get /metrics"},
	} {
		code, e := call(t, h, c.method, c.path, "viewer", "")
		assert.Equal(t, http.StatusForbidden, code, c.path)
		assert.Equal(t, "Forbidden", e.Type, c.path)
		assert.Contains(t, e.Error, c.want, c.path)
	}
}

func authorizeAs(t *testing.T, grants ...string) (*handler, context.Context) {
	t.Helper()
	h := newHandler(starter.New(nil, starter.Options{}), nil)
	h.auth = fakeAuth{grants: map[string][]string{"alice": grants}}.auth()
	return h, withUser(context.Background(), &User{Name: "alice"})
}

// A team allowed to restore into team-a only: its restore of shop's data
// into team-a goes ahead without cluster-scoped objects, and says why; a
// restore into kube-system, or of every namespace, is refused.
func TestRestoreIsAuthorizedPerNamespace(t *testing.T) {
	h, ctx := authorizeAs(t, "get backups.cairn.io nightly in namespace shop", "create restores.cairn.io in namespace team-a")

	req := &starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{BackupName: "nightly",
		IncludedNamespaces: []string{"shop"}, NamespaceMapping: map[string]string{"shop": "team-a"}}}
	require.NoError(t, h.admitRestore(ctx, req))
	assert.Equal(t, "alice may not restore cluster-scoped objects (needs create restores.cairn.io cluster-wide)", req.ClusterScopedDenied)

	for name, spec := range map[string]v1alpha1.RestoreSpec{
		"into kube-system":        {BackupName: "nightly", IncludedNamespaces: []string{"shop"}, NamespaceMapping: map[string]string{"shop": "kube-system"}},
		"from another namespace":  {BackupName: "nightly", IncludedNamespaces: []string{"kube-system"}, NamespaceMapping: map[string]string{"kube-system": "team-a"}},
		"every namespace":         {BackupName: "nightly"},
		"a glob":                  {BackupName: "nightly", IncludedNamespaces: []string{"sh*"}, NamespaceMapping: map[string]string{"shop": "team-a"}},
		"cluster-scoped, by name": {BackupName: "nightly", IncludedNamespaces: []string{"shop"}, NamespaceMapping: map[string]string{"shop": "team-a"}, ClusterResources: v1alpha1.ClusterResourcesInclude},
	} {
		err := h.admitRestore(ctx, &starter.CreateRestoreRequest{RestoreSpec: spec})
		var forbidden *starter.ForbiddenError
		assert.ErrorAs(t, err, &forbidden, name)
	}

	admin, actx := authorizeAs(t, "get backups.cairn.io nightly cluster-wide", "create restores.cairn.io cluster-wide")
	all := &starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{BackupName: "nightly"}}
	require.NoError(t, admin.admitRestore(actx, all))
	assert.Empty(t, all.ClusterScopedDenied, "a cluster-wide grant restores cluster-scoped objects")
}

func TestBackupIsAuthorizedPerNamespace(t *testing.T) {
	h, ctx := authorizeAs(t, "create backups.cairn.io in namespace team-a")
	require.NoError(t, h.admitBackup(ctx, &starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-a", "team-a"}}}))
	for name, spec := range map[string]v1alpha1.BackupSpec{
		"another namespace's Secrets": {IncludedNamespaces: []string{"team-a", "kube-system"}},
		"every namespace":             {},
		"a glob":                      {IncludedNamespaces: []string{"team-*"}},
		"every cluster-scoped object": {IncludedNamespaces: []string{"team-a"}, ClusterResources: v1alpha1.ClusterResourcesInclude},
	} {
		var forbidden *starter.ForbiddenError
		assert.ErrorAs(t, h.admitBackup(ctx, &starter.CreateBackupRequest{BackupSpec: spec}), &forbidden, name)
	}
}

// Whoever sets a schedule needs what starting its run would need: every
// run acts as them.
func TestScheduleIsAuthorizedAsItsRuns(t *testing.T) {
	users := fakeAuth{grants: map[string][]string{
		"scheduler": {"create schedules.cairn.io cluster-wide", "update schedules.cairn.io sys cluster-wide", "create backups.cairn.io in namespace team-a"}}}
	h := Handler(starter.New(mocks.NewClient(t), starter.Options{DefaultLocation: "mem://"}), zap.NewNop(), users.auth())
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodPost, "/v1/schedules", `{"name":"sys","cron":"@daily","template":{"includedNamespaces":["kube-system"]}}`,
			"scheduler may not create backups.cairn.io in namespace kube-system"},
		{http.MethodPut, "/v1/schedules/sys", `{"name":"sys","cron":"@daily","template":{"includedNamespaces":["team-a"],"clusterResources":"include"}}`,
			"scheduler may not create backups.cairn.io cluster-wide"},
		{http.MethodPost, "/v1/schedules", `{"name":"etcd","kind":"etcd-snapshot","cron":"@daily"}`,
			"scheduler may not create etcdsnapshots.cairn.io cluster-wide"},
	} {
		code, e := call(t, h, c.method, c.path, "scheduler", c.body)
		assert.Equal(t, http.StatusForbidden, code, c.path)
		assert.Contains(t, e.Error, c.want, c.path)
	}
}
