package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func versionServer(t *testing.T, status int, body string) discovery.DiscoveryInterface {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/version", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return d
}

func TestServerVersionKeepsTheServersReasonForARefusal(t *testing.T) {
	d := versionServer(t, http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure",
	  "message":"users \"alice\" is forbidden: User \"worker\" cannot impersonate resource \"users\"",
	  "reason":"Forbidden","code":403}`)
	_, err := ServerVersion(context.Background(), d)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), `cannot impersonate resource "users"`)
}

func TestServerVersionDecodesTheAnswer(t *testing.T) {
	d := versionServer(t, http.StatusOK, `{"major":"1","minor":"34","gitVersion":"v1.34.1"}`)
	info, err := ServerVersion(context.Background(), d)
	require.NoError(t, err)
	assert.Equal(t, "v1.34.1", info.GitVersion)
}
