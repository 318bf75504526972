package kube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// CreateRaw posts the body to the collection, as its caller, and an
// answer the server refuses is the API error a typed client would give,
// with the server's message.
func TestCreateRawPostsToTheCollectionAsTheCaller(t *testing.T) {
	type request struct{ method, path, query, body, user string }
	var got []request
	refusals := map[string]struct {
		code   int
		status string
	}{
		"taken": {http.StatusConflict, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,` +
			`"message":"deployments.apps \"taken\" already exists","details":{"name":"taken","group":"apps","kind":"deployments"}}`},
		"grant": {http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
			`"message":"deployments.apps \"grant\" is forbidden: user \"alice\" is attempting to grant RBAC permissions not currently held"}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, request{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Get("Impersonate-User")})
		w.Header().Set("Content-Type", "application/json")
		for name, refusal := range refusals {
			if strings.Contains(string(body), `"`+name+`"`) {
				w.WriteHeader(refusal.code)
				_, _ = io.WriteString(w, refusal.status)
				return
			}
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c, err := NewClients(&rest.Config{Host: srv.URL, Impersonate: rest.ImpersonationConfig{UserName: "alice"}})
	require.NoError(t, err)
	require.True(t, c.CanCreateRaw())
	ctx := context.Background()

	answer, err := c.CreateRaw(ctx, deployments, "shop", []byte(`{"metadata":{"name":"web"}}`), false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"name":"web"}}`, string(answer))
	_, err = c.CreateRaw(ctx, deployments, "shop", []byte(`{"metadata":{"name":"taken"}}`), true)
	assert.True(t, apierrors.IsAlreadyExists(err), "got %v", err)
	assert.ErrorContains(t, err, `deployments.apps "taken" already exists`)
	_, err = c.CreateRaw(ctx, deployments, "shop", []byte(`{"metadata":{"name":"grant"}}`), false)
	assert.True(t, apierrors.IsForbidden(err), "got %v", err)
	assert.ErrorContains(t, err, "attempting to grant RBAC permissions not currently held")
	pvs := Resource{GVR: deployments.GVR, Namespaced: false}
	pvs.GVR.Group, pvs.GVR.Resource = "", "persistentvolumes"
	_, err = c.CreateRaw(ctx, pvs, "", []byte(`{}`), false)
	require.NoError(t, err)

	assert.Equal(t, []request{
		{"POST", "/apis/apps/v1/namespaces/shop/deployments", "", `{"metadata":{"name":"web"}}`, "alice"},
		{"POST", "/apis/apps/v1/namespaces/shop/deployments", "dryRun=All", `{"metadata":{"name":"taken"}}`, "alice"},
		{"POST", "/apis/apps/v1/namespaces/shop/deployments", "", `{"metadata":{"name":"grant"}}`, "alice"},
		{"POST", "/api/v1/persistentvolumes", "", `{}`, "alice"},
	}, got)

	_, err = (&Clients{}).CreateRaw(ctx, deployments, "shop", nil, false)
	assert.ErrorIs(t, err, ErrNoRawClient)
}
