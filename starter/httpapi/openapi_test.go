package httpapi_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/dev/devserver/devservertest"
	"github.com/cairn-backup/cairn/starter/httpapi"
)

func loadOpenAPI(t *testing.T, body []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(body)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "a valid OpenAPI 3 document")
	return doc
}

// TestOpenAPIDocumentIsValid: the document validates, every operation has
// a unique ID and a summary, and every body and JSON reply has a schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	body, err := httpapi.OpenAPI()
	require.NoError(t, err)
	doc := loadOpenAPI(t, body)
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			assert.NotEmpty(t, op.Summary, "%s %s", method, path)
			assert.False(t, ids[op.OperationID], "operation ID %s is unique", op.OperationID)
			ids[op.OperationID] = true
			if op.RequestBody != nil {
				assert.NotNil(t, op.RequestBody.Value.Content.Get("application/json").Schema, "%s %s body", method, path)
			}
		}
	}
	create := doc.Paths.Find("/v1/backups").Post
	require.NotNil(t, create)
	props := create.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties
	assert.Contains(t, props, "includedNamespaces", "the spec's fields are at the top level of the body")
	assert.Equal(t, &openapi3.Types{"string"}, props["ttl"].Value.Type, "a duration is written as text")
}

// TestOpenAPIMatchesTheServedRoutes asks the server, over a real Temporal,
// every operation the document names: each is routed to a handler (not the
// mux's 404 or 405) and answers a status the document lists for it; every
// other method on a documented path is refused with 405. The document the
// server serves is the same one.
func TestOpenAPIMatchesTheServedRoutes(t *testing.T) {
	c, _ := devservertest.StarterClient(t)
	h := httpapi.Handler(c, zap.NewNop(), httpapi.StaticToken("probe", nil))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer probe")
		h.ServeHTTP(w, r)
	}))
	defer api.Close()

	served := get(t, api.URL+"/openapi.json")
	want, err := httpapi.OpenAPI()
	require.NoError(t, err)
	assert.JSONEq(t, string(want), served, "GET /openapi.json serves the document")
	doc := loadOpenAPI(t, []byte(served))

	for path, item := range doc.Paths.Map() {
		url := api.URL + strings.ReplaceAll(path, "{name}", "openapi-probe")
		ops := item.Operations()
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, err := http.NewRequest(method, url, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			op, documented := ops[method]
			if !documented {
				assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s is not documented, so not served", method, path)
				continue
			}
			assert.NotEqual(t, "404 page not found\n", string(body), "%s %s is routed", method, path)
			assert.NotEqual(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s is routed", method, path)
			listed := slices.Collect(maps.Keys(op.Responses.Map()))
			assert.Contains(t, listed, strconv.Itoa(resp.StatusCode), "%s %s answered a status its document lists: %s", method, path, body)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
