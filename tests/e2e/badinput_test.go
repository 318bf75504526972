package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

type apiError struct {
	Error    string   `json:"error"`
	Type     string   `json:"type"`
	Problems []string `json:"problems"`
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// TestBadInputIsRejectedBeforeAnythingStarts drives the HTTP starter API and
// the CLI with requests that cannot succeed, and checks each gets a clear
// error with the right status or exit code and starts no workflow.
func TestBadInputIsRejectedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	s.startWorker()
	api := devAPI(t, s)

	readOnly := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(readOnly, []byte("x"), 0o444))

	cases := []struct {
		name, body, wantInError string
	}{
		{"name not DNS-1123", `{"name":"Bad_Name"}`, "not a valid DNS-1123 name"},
		{"unknown resource", `{"name":"typo","includedResources":["configmapz"]}`, "unknown resources [configmapz]"},
		{"malformed selector", `{"name":"sel","labelSelector":"app in ("}`, "malformed label selector"},
		{"malformed glob", `{"name":"glob","includedNamespaces":["shop-["]}`, "malformed glob"},
		{"bad cluster mode", `{"name":"mode","clusterResources":"some"}`, "clusterResources"},
		{"unopenable location", `{"name":"loc","storageLocation":"ftp://nowhere/x"}`, "unsupported scheme"},
		{"unwritable location", `{"name":"loc2","storageLocation":"file://` + readOnly + `/sub"}`, "backup location"},
		{"unknown field", `{"name":"f","includeNamespaces":["x"]}`, "unknown field"},
		{"not JSON", `{"name":`, "not a valid backup spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, api.URL+"/v1/backups", tc.body)
			assert.Equal(t, http.StatusBadRequest, code, string(body))
			var e apiError
			require.NoError(t, json.Unmarshal(body, &e), string(body))
			assert.Equal(t, "Invalid", e.Type)
			assert.Contains(t, e.Error, tc.wantInError)
		})
	}

	// Nothing was started for any of them.
	list, err := s.starter.ListBackups(t.Context())
	require.NoError(t, err)
	assert.Empty(t, list.Items)

	// The CLI says the same with exit code 2 and starts nothing either.
	_, stderr, code := s.cli("backup", "create", "Bad_Name")
	assert.Equal(t, starter.ExitInvalid, code)
	assert.Contains(t, stderr, "DNS-1123")
	_, stderr, code = s.cli("backup", "create", "x", "--bogus-flag")
	assert.Equal(t, starter.ExitInvalid, code, stderr)
	_, _, code = s.cli("backup", "get", "nope")
	assert.Equal(t, starter.ExitNotFound, code)

	// Idempotent create and conflicts.
	good := `{"name":"same","includedNamespaces":["default"]}`
	code, body := post(t, api.URL+"/v1/backups", good)
	require.Equal(t, http.StatusCreated, code, string(body))
	var first starter.CreateResult
	require.NoError(t, json.Unmarshal(body, &first))
	assert.True(t, first.Created)
	code, body = post(t, api.URL+"/v1/backups", good)
	require.Equal(t, http.StatusOK, code, string(body))
	var again starter.CreateResult
	require.NoError(t, json.Unmarshal(body, &again))
	assert.False(t, again.Created)
	assert.Equal(t, first.RunID, again.RunID, "the same request returns the same run")

	code, body = post(t, api.URL+"/v1/backups", `{"name":"same","includedNamespaces":["kube-system"]}`)
	assert.Equal(t, http.StatusConflict, code, string(body))
	_, stderr, code = s.cli("backup", "create", "same", "--include-namespaces", "kube-public")
	assert.Equal(t, starter.ExitConflict, code, stderr)

	// Once committed, the same request is answered from the location too.
	v := s.waitDone("same", 2*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
	recordHistory(t, s, v1alpha1.BackupWorkflowID("same"), "backup_completed.json")
	recordLatest(t, s, v1alpha1.ValidateFiltersWorkflowName, "validate_filters_completed.json")
	code, _ = post(t, api.URL+"/v1/backups", good)
	assert.Equal(t, http.StatusOK, code)

	// Restores over HTTP: an unknown backup is 404, a repeat is 200 with the
	// same run, another spec under the name is 409.
	code, body = post(t, api.URL+"/v1/restores", `{"name":"r-none","backupName":"no-such-backup"}`)
	assert.Equal(t, http.StatusNotFound, code, string(body))
	restore := `{"name":"r-same","backupName":"same","namespaceMapping":{"default":"same-copy"}}`
	code, body = post(t, api.URL+"/v1/restores", restore)
	require.Equal(t, http.StatusCreated, code, string(body))
	require.NoError(t, json.Unmarshal(body, &first))
	code, body = post(t, api.URL+"/v1/restores", restore)
	require.Equal(t, http.StatusOK, code, string(body))
	require.NoError(t, json.Unmarshal(body, &again))
	assert.Equal(t, first.RunID, again.RunID)
	code, body = post(t, api.URL+"/v1/restores", `{"name":"r-same","backupName":"same"}`)
	assert.Equal(t, http.StatusConflict, code, string(body))

	// A fresh install (its own empty Temporal) pointed at the same location
	// lists the committed backup and refuses its name for another spec.
	freshAddr := freePort(t)
	startProc(t, "fresh-temporal", "dev", "--no-worker", "--no-api", "--ui-address", "",
		"--data-dir", t.TempDir(), "--temporal-address", freshAddr)
	waitTemporal(t, freshAddr)
	out, stderr, code := runCLI(t, "backup", "list", "-o", "json", "--temporal-address", freshAddr, "--location", s.location)
	require.Equal(t, 0, code, stderr)
	var listed starter.BackupList
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Items, 1)
	assert.Equal(t, "same", listed.Items[0].Name)
	assert.Equal(t, starter.SourceLocation, listed.Items[0].Source)
	assert.Equal(t, v1alpha1.PhaseCompleted, listed.Items[0].Phase)
	_, stderr, code = runCLI(t, "backup", "create", "same", "--include-namespaces", "kube-public",
		"--temporal-address", freshAddr, "--location", s.location)
	assert.Equal(t, starter.ExitConflict, code, stderr)

	resp, err := http.Get(api.URL + "/v1/backups/nope")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	code, _ = post(t, api.URL+"/v1/backups/same/cancel", "")
	assert.Equal(t, http.StatusConflict, code, "a finished backup cannot be canceled")
}
