package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func guarded(t *testing.T, h func(http.Handler) http.Handler, r *http.Request) (int, bool) {
	t.Helper()
	reached := false
	rec := httptest.NewRecorder()
	h(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(rec, r)
	return rec.Code, reached
}

const exfil = `{"name":"exfil","includedNamespaces":["sec"]}`

// A page in the user's browser can POST text/plain to any address without
// asking first: such a body is refused before anything reads it.
func TestANonJSONBodyIsRefused(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/backups", strings.NewReader(exfil))
	r.Header.Set("Content-Type", "text/plain")
	code, reached := guarded(t, browserGuard, r)
	assert.Equal(t, http.StatusUnsupportedMediaType, code)
	assert.False(t, reached)

	r = httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/backups", strings.NewReader(exfil))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	_, reached = guarded(t, browserGuard, r)
	assert.True(t, reached, "a JSON body goes through")
}

// A request a browser marks as coming from another site is refused, even
// without a body (a cancel or a delete).
func TestACrossSiteRequestIsRefused(t *testing.T) {
	r := httptest.NewRequest(http.MethodDelete, "http://127.0.0.1:8080/v1/backups/b1", nil)
	r.Header.Set("Origin", "https://evil.example")
	code, reached := guarded(t, browserGuard, r)
	assert.Equal(t, http.StatusForbidden, code)
	assert.False(t, reached)

	r = httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/backups/b1/cancel", nil)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	code, _ = guarded(t, browserGuard, r)
	assert.Equal(t, http.StatusForbidden, code)

	r = httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/v1/backups", nil)
	r.Header.Set("Origin", "http://127.0.0.1:8080")
	_, reached = guarded(t, browserGuard, r)
	assert.True(t, reached, "the API's own origin goes through")
}

// DNS rebinding reaches 127.0.0.1 under another site's name: an API on
// loopback answers only to loopback names.
func TestALoopbackAPIAnswersOnlyToLoopbackNames(t *testing.T) {
	for host, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "LOCALHOST": true,
		"evil.example:8080": false, "10.0.0.5:8080": false,
	} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/v1/backups", nil)
		r.Host = host
		code, reached := guarded(t, LoopbackHostsOnly, r)
		assert.Equal(t, ok, reached, host)
		if !ok {
			assert.Equal(t, http.StatusForbidden, code, host)
		}
	}
}
