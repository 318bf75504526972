package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// Every backup, restore and schedule route has a twin under a namespace,
// and the OpenAPI document lists both.
func TestEveryKindHasNamespacedPaths(t *testing.T) {
	var patterns []string
	for _, rt := range newHandler(starter.New(nil, starter.Options{}), nil).routes() {
		patterns = append(patterns, rt.pattern)
	}
	for _, want := range []string{
		"POST /v1/namespaces/{namespace}/backups", "GET /v1/namespaces/{namespace}/backups/{name}/logs",
		"DELETE /v1/namespaces/{namespace}/backups/{name}", "GET /v1/namespaces/{namespace}/restores/{name}/results",
		"PUT /v1/namespaces/{namespace}/schedules/{name}", "POST /v1/namespaces/{namespace}/schedules/{name}/trigger",
	} {
		assert.Contains(t, patterns, want)
	}
	assert.NotContains(t, patterns, "POST /v1/namespaces/{namespace}/etcd-snapshots", "etcd snapshots are the cluster's")
}

// A namespace's path asks for the route's access in that namespace, by
// the name the namespace knows: a Role in team-a is what it takes.
func TestNamespacedPathsAskForAccessInTheirNamespace(t *testing.T) {
	users := fakeAuth{grants: map[string][]string{"dev": {"get backups.cairn.io nightly in namespace team-a"}}}
	h := Handler(starter.New(mocks.NewClient(t), starter.Options{DefaultLocation: "mem://"}), zap.NewNop(), users.auth())
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/v1/namespaces/team-b/backups/nightly", "may not get backups.cairn.io nightly in namespace team-b"},
		{http.MethodDelete, "/v1/namespaces/team-a/backups/nightly", "may not delete backups.cairn.io nightly in namespace team-a"},
		{http.MethodGet, "/v1/namespaces/team-a/backups", "may not list backups.cairn.io in namespace team-a"},
		{http.MethodGet, "/v1/backups/team-a.nightly", "may not get backups.cairn.io team-a.nightly cluster-wide"},
		{http.MethodPost, "/v1/namespaces/team-a/schedules/s1/pause", "may not update schedules.cairn.io s1 in namespace team-a"},
	} {
		code, e := call(t, h, c.method, c.path, "dev", "")
		assert.Equal(t, http.StatusForbidden, code, c.path)
		assert.Contains(t, e.Error, c.want, c.path)
	}
}

// What a namespace's path starts stays in the namespace: every reach
// beyond it is a 400 naming the field, before Temporal is asked anything
// (the mock fails the test on any call), whatever the caller may do.
func TestNamespacedCreatesReachTheirNamespaceOnly(t *testing.T) {
	h := Handler(starter.New(mocks.NewClient(t), starter.Options{DefaultLocation: "mem://"}), zap.NewNop(), Auth{
		Authenticate:  func(context.Context, string) (*User, error) { return &User{Name: "admin"}, nil },
		Authorize:     func(context.Context, *User, Access) (bool, string, error) { return true, "", nil },
		HomeNamespace: "cairn",
	})
	for _, c := range []struct {
		path, body string
		want       []string
	}{
		{"/v1/namespaces/team-a/backups", `{"name":"nightly","includedNamespaces":["team-a","team-b"],"clusterResources":"include"}`,
			[]string{`includedNamespaces: "team-b" is not this namespace`, `clusterResources "include"`}},
		{"/v1/namespaces/team-a/backups", `{"name":"team-b.nightly"}`, []string{`name "team-b.nightly"`}},
		{"/v1/namespaces/team-a/restores", `{"name":"r1","backupName":"team-b.nightly"}`,
			[]string{`backupName "team-b.nightly" names a backup of another namespace`}},
		{"/v1/namespaces/team-a/restores", `{"name":"r1","backupName":"nightly","namespaceMapping":{"team-a":"prod"}}`,
			[]string{"namespaceMapping: team-a→prod"}},
		{"/v1/namespaces/team-a/schedules", `{"name":"hourly","cron":"@hourly","template":{"includedNamespaces":["*"]}}`,
			[]string{`template.includedNamespaces: "*" is not this namespace`}},
		{"/v1/namespaces/team-a/schedules", `{"name":"snap","kind":"EtcdSnapshot","cron":"@hourly"}`, []string{`kind "EtcdSnapshot"`}},
		{"/v1/namespaces/cairn/backups", `{"name":"nightly"}`, []string{"namespace cairn is cairn's own"}},
		{"/v1/namespaces/Team_A/backups", `{"name":"nightly"}`, []string{`namespace "Team_A" in the path`}},
	} {
		code, e := call(t, h, http.MethodPost, c.path, "admin", c.body)
		assert.Equal(t, http.StatusBadRequest, code, c.body)
		for _, w := range c.want {
			assert.Contains(t, e.Error+" "+strings.Join(e.Problems, "\n"), w, c.body)
		}
	}
	code, e := call(t, h, http.MethodPut, "/v1/namespaces/team-a/schedules/hourly", "admin", `{"name":"daily","cron":"@daily"}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, strings.Join(e.Problems, "\n"), "a schedule cannot be renamed")
}

// A request of a namespace's path becomes what a resource of that name
// in the namespace starts; a name may be given either way.
func TestScopingNamesTheNamespacesRun(t *testing.T) {
	for _, name := range []string{"nightly", "team-a.nightly"} {
		req := starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: name}}
		require.NoError(t, scopeBackup("team-a", &req))
		assert.Equal(t, "team-a.nightly", req.Name)
		assert.Equal(t, []string{"team-a"}, req.IncludedNamespaces)
		assert.Equal(t, v1alpha1.ClusterResourcesExclude, req.ClusterResources)
	}
	rreq := starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "r1", BackupName: "team-a.nightly"}}
	require.NoError(t, scopeRestore("team-a", &rreq))
	assert.Equal(t, "team-a.r1", rreq.Name)
	assert.Equal(t, "team-a.nightly", rreq.BackupName)
	assert.Equal(t, []string{"team-a"}, rreq.IncludedNamespaces)

	assert.Equal(t, "team-a.x", runNameIn("team-a", "x"))
	assert.Equal(t, "team-a.x", runNameIn("team-a", "team-a.x"))
	assert.Equal(t, "team-a.team-b.x", runNameIn("team-a", "team-b.x"), "another namespace's run is out of reach")
	assert.Equal(t, "team-b.x", runNameIn("", "team-b.x"))
}
