package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// With a catalog, a request names one of the operator's locations: an
// unknown name, a URL, or a backup into a read-only location is 400, and
// Temporal is never called (the mock fails on any call).
func TestTheAPIOnlyUsesTheOperatorsLocations(t *testing.T) {
	catalog, err := location.ParseCatalog("mem://", []string{"archive=file:///srv/archive;readonly"}, false)
	require.NoError(t, err)
	srv := httptest.NewServer(authedHandler(starter.New(mocks.NewClient(t), starter.Options{Locations: catalog})))
	defer srv.Close()

	for _, c := range []struct{ path, body, want string }{
		{"/v1/backups", `{"name":"exfil","storageLocation":"file:///tmp/evil-loc"}`, "a location is named, not given as a URL"},
		{"/v1/backups", `{"name":"ssrf","storageLocation":"s3://b?endpoint=http://169.254.169.254"}`, "a location is named"},
		{"/v1/backups", `{"name":"typo","storageLocation":"archiv"}`, `unknown location "archiv" (configured: archive, default)`},
		{"/v1/backups", `{"name":"ro","storageLocation":"archive"}`, "location archive is read-only"},
		{"/v1/restores", `{"name":"r","backupName":"b","storageLocation":"file:///tmp/evil-loc"}`, "a location is named"},
		{"/v1/schedules", `{"name":"s","cron":"@daily","retention":{"keepLast":3},"template":{"storageLocation":"archive"}}`, "location archive is read-only"},
		{"/v1/etcd-snapshots", `{"name":"e","storageLocation":"file:///tmp/evil-loc"}`, "a location is named"},
	} {
		resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		require.NoError(t, err)
		var e errorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, c.body)
		assert.Contains(t, e.Error, c.want, c.body)
	}
}
