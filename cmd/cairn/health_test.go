package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/client"
)

// answering is a Temporal client whose health check returns err.
type answering struct {
	client.Client
	err error
}

func (a answering) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, a.err
}

func probe(t *testing.T, h *health, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestReadinessFollowsTemporal(t *testing.T) {
	h := newHealth("temporal.wrong:7233")
	code, body := probe(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "connecting to Temporal at temporal.wrong:7233")

	h.unreachable(errors.New("dial tcp: lookup temporal.wrong: no such host"))
	code, body = probe(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "Temporal at temporal.wrong:7233: dial tcp: lookup temporal.wrong: no such host")
	code, _ = probe(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code, "alive while it waits: no restart loop")

	h.connected(answering{})
	code, _ = probe(t, h, "/readyz")
	assert.Equal(t, http.StatusOK, code)

	h.connected(answering{err: errors.New("connection refused")})
	code, body = probe(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "a Temporal that stops answering makes the worker unready")
	assert.Contains(t, body, "connection refused")
}
