package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// The API's error replies become the starter errors their statuses stand
// for, so the CLI exits alike through the API and through Temporal.
func TestErrorRepliesBecomeStarterErrors(t *testing.T) {
	replies := map[string]struct {
		status int
		body   string
	}{
		"/v1/backups/invalid":   {400, `{"error":"invalid request: 2 problems","type":"Invalid","problems":["a","b"]}`},
		"/v1/backups/missing":   {404, `{"error":"backup \"missing\" not found","type":"NotFound"}`},
		"/v1/backups/taken":     {409, `{"error":"name taken","type":"Conflict"}`},
		"/v1/backups/anonymous": {401, `{"error":"no bearer token","type":"Unauthorized"}`},
		"/v1/backups/denied":    {403, `{"error":"alice may not get backups.cairn.io","type":"Forbidden"}`},
		"/v1/backups/broken":    {502, `bad gateway`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := replies[r.URL.Path]
		w.WriteHeader(rep.status)
		_, _ = w.Write([]byte(rep.body))
	}))
	defer srv.Close()
	c, err := New(srv.URL, srv.Client())
	require.NoError(t, err)
	ctx := context.Background()

	_, err = c.GetBackup(ctx, "invalid")
	var invalid *starter.InvalidError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, []string{"a", "b"}, invalid.Problems)
	for name, code := range map[string]int{"invalid": starter.ExitInvalid, "missing": starter.ExitNotFound, "taken": starter.ExitConflict,
		"anonymous": starter.ExitDenied, "denied": starter.ExitDenied, "broken": starter.ExitError} {
		_, err := c.GetBackup(ctx, name)
		assert.Equal(t, code, starter.ExitCode(err), "%s: %v", name, err)
	}
	_, err = c.GetBackup(ctx, "denied")
	assert.ErrorContains(t, err, "alice may not get backups.cairn.io")
	_, err = c.GetBackup(ctx, "broken")
	assert.ErrorContains(t, err, "bad gateway")
}

// Each call goes to its route, with its query and body.
func TestCallsGoToTheirRoutes(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.RequestURI()
		if r.Body != nil {
			var body map[string]any
			if json.NewDecoder(r.Body).Decode(&body) == nil {
				line += " " + body["name"].(string)
				assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			}
		}
		got = append(got, line)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/", srv.Client())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "b1"}})
	require.NoError(t, err)
	_, err = c.DeleteBackup(ctx, "b 1", true)
	require.NoError(t, err)
	_, err = c.PauseSchedule(ctx, "nightly", "upgrade")
	require.NoError(t, err)
	_, err = c.UpdateSchedule(ctx, "nightly", v1alpha1.ScheduleSpec{Name: "nightly"})
	require.NoError(t, err)
	_, err = c.RestoreResults(ctx, "r1")
	require.NoError(t, err)
	_, err = c.DeleteEtcdSnapshot(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"POST /v1/backups b1",
		"DELETE /v1/backups/b%201?cancel=true",
		"POST /v1/schedules/nightly/pause?note=upgrade",
		"PUT /v1/schedules/nightly nightly",
		"GET /v1/restores/r1/results",
		"DELETE /v1/etcd-snapshots/s1",
	}, got)
}

func TestATokenGoesOverPlainHTTPOnlyToLoopback(t *testing.T) {
	for _, ok := range []string{"https://cairn-api:8080", "http://127.0.0.1:8080", "http://[::1]:8080", "http://localhost:8080"} {
		_, err := New(ok, http.DefaultClient)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"http://cairn-api:8080", "http://10.0.0.5", "ftp://x", "cairn-api:8080", ""} {
		_, err := New(bad, http.DefaultClient)
		assert.Error(t, err, bad)
	}
}

func TestWaitRunFollowsDeletionsUntilGone(t *testing.T) {
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets++
		if gets < 2 {
			_, _ = w.Write([]byte(`{"name":"b1","phase":"Completed"}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"not found"}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, srv.Client())
	require.NoError(t, err)
	require.NoError(t, c.WaitRun(context.Background(), v1alpha1.DeleteWorkflowID("b1"), ""))
	assert.Equal(t, 2, gets)
	err = c.WaitRun(context.Background(), v1alpha1.BackupWorkflowID("b1"), "")
	assert.Error(t, err, "only deletions are followed")
	assert.False(t, errors.Is(err, starter.ErrNotFound))
}
