package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/cairn-backup/cairn/starter/httpapi"
)

// devAPI serves the starter API over s with cairn dev's auth, for tests
// of everything but auth: every request reaches it with the token.
func devAPI(t *testing.T, s *stack) *httptest.Server {
	t.Helper()
	// Its warnings (a failed read of the schedules for /metrics) go to
	// the test's log.
	h := httpapi.Handler(s.starter, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), httpapi.StaticToken("e2e", nil))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer e2e")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	return api
}
