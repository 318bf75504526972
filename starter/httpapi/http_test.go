package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/cairn-backup/cairn/starter"
)

// An invalid request is answered 400 with every problem listed, and
// Temporal is never called: the mock fails the test on any call.
func TestCreateRejectsInvalidSpecWithoutCallingTemporal(t *testing.T) {
	tc := mocks.NewClient(t)
	srv := httptest.NewServer(authedHandler(starter.New(tc, starter.Options{DefaultLocation: "mem://"})))
	defer srv.Close()

	for body, want := range map[string][]string{
		`{"name":"Bad_Name","labelSelector":"a in (","clusterResources":"most"}`: {"DNS-1123", "malformed label selector", "clusterResources"},
		`{"name":"ok","includedNamespaces":["["]}`:                               {"malformed glob"},
		`{"name":"ok","storageLocation":"ftp://x/y"}`:                            {"unsupported scheme"},
		`{"name":"ok","selector":"a=b"}`:                                         {"unknown field"},
		`{"name":"ok","schedule":"nightly"}`:                                     {"schedule is set by cairn"},
		`{"name":"ok","options":{"heartbeatTimeout":"0s","pageSize":-1}}`:        {"options.heartbeatTimeout 0s", "options.pageSize -1"},
	} {
		resp, err := http.Post(srv.URL+"/v1/backups", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var e errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Equal(t, "Invalid", e.Type)
		for _, w := range want {
			assert.Contains(t, e.Error, w, body)
		}
	}
}

// Schedules and etcd snapshots are checked the same way: 400 with every
// problem, and no call to Temporal (the mock fails on any).
func TestCreateScheduleAndEtcdSnapshotRejectInvalidSpecs(t *testing.T) {
	tc := mocks.NewClient(t)
	srv := httptest.NewServer(authedHandler(starter.New(tc, starter.Options{DefaultLocation: "mem://"})))
	defer srv.Close()

	for path, cases := range map[string]map[string][]string{
		"/v1/schedules": {
			`{"name":"n","cron":"61 * * * *","timeZone":"Mars/Olympus","retention":{"keepLast":3,"maxAge":"1h"}}`: {
				`cron "61 * * * *" is invalid`, `timeZone "Mars/Olympus"`, "found 2"},
			`{"name":"n","every":"1h","retention":{"keepLast":-1,"keepFailed":-1}}`:                   {"keepLast -1", "keepFailed -1"},
			`{"name":"n","every":"1h","retention":{"keepLast":1},"template":{"name":"x"}}`:            {"template.name must be empty"},
			`{"name":"n","every":"1h","retention":{"keepLast":1},"backupOptions":{"concurrency":-1}}`: {"backupOptions.concurrency -1"},
		},
		"/v1/etcd-snapshots": {
			`{"name":"Bad_Name"}`:       {"DNS-1123"},
			`{"name":"ok","ttl":"-1h"}`: {"ttl -1h0m0s must not be negative"},
		},
	} {
		for body, want := range cases {
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			var e errorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			for _, w := range want {
				assert.Contains(t, e.Error, w, body)
			}
		}
	}
}

// A restore request is checked the same way: 400 with every problem, and
// no call to Temporal.
func TestCreateRestoreRejectsInvalidSpecWithoutCallingTemporal(t *testing.T) {
	tc := mocks.NewClient(t)
	srv := httptest.NewServer(authedHandler(starter.New(tc, starter.Options{DefaultLocation: "mem://"})))
	defer srv.Close()

	for body, want := range map[string][]string{
		`{"name":"Bad_Name","existingResourcePolicy":"replace"}`:                     {"DNS-1123", "backupName is required", "existingResourcePolicy"},
		`{"name":"ok","backupName":"b","namespaceMapping":{"shop":"Shop_2"}}`:        {"namespaceMapping target"},
		`{"name":"ok","backupName":"b","namespaceMapping":{"a":"x","b":"x"}}`:        {"maps both"},
		`{"name":"ok","backupName":"b","resourcePriorities":["*.apps"]}`:             {"resourcePriorities"},
		`{"name":"ok","backupName":"b","restoreStatus":{"includedResources":["["]}}`: {"restoreStatus"},
		`{"name":"ok","backupName":"b","storageLocation":"ftp://x/y"}`:               {"unsupported scheme"},
		`{"name":"ok","fromBackup":"b"}`:                                             {"unknown field"},
		`{"name":"ok","backupName":"b","options":{"workers":2}}`:                     {"unknown field"},
		`{"name":"ok","backupName":"b","options":{"batchSize":100000}}`:              {"options.batchSize 100000"},
		`{"name":`: {"not a valid restore spec"},
	} {
		resp, err := http.Post(srv.URL+"/v1/restores", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var e errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Equal(t, "Invalid", e.Type, body)
		assert.NotEmpty(t, e.Problems, body)
		for _, w := range want {
			assert.Contains(t, e.Error, w, body)
		}
	}
}

// A restore neither Temporal nor the location knows is 404 on every route
// that names it.
func TestUnknownRestoreIsNotFound(t *testing.T) {
	tc := mocks.NewClient(t)
	tc.On("DescribeWorkflowExecution", mock.Anything, "restore/nope", "").Return(nil, serviceerror.NewNotFound("no such workflow"))
	srv := httptest.NewServer(authedHandler(starter.New(tc, starter.Options{DefaultLocation: "file://" + t.TempDir()})))
	defer srv.Close()

	for _, route := range []struct{ method, path string }{
		{http.MethodGet, "/v1/restores/nope"},
		{http.MethodPost, "/v1/restores/nope/cancel"},
		{http.MethodGet, "/v1/restores/nope/logs"},
		{http.MethodGet, "/v1/restores/nope/results"},
	} {
		req, err := http.NewRequest(route.method, srv.URL+route.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, route.path)
		assert.Equal(t, "NotFound", e.Type, route.path)
		assert.Contains(t, e.Error, `restore "nope"`, route.path)
	}
}

func TestHealthz(t *testing.T) {
	tc := mocks.NewClient(t)
	tc.On("CheckHealth", mock.Anything, mock.Anything).Return(nil, nil).Once()
	tc.On("CheckHealth", mock.Anything, mock.Anything).Return(nil, serviceerror.NewUnavailable("connection refused")).Once()
	srv := httptest.NewServer(authedHandler(starter.New(tc, starter.Options{})))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}
