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

// List reads each page whole, whatever its size against the last one,
// and a refused page is the API error: an expired continue token is one
// the collector recognises.
func TestListReadsPagesOfAnySizeAndKeepsAPIErrors(t *testing.T) {
	page := func(names ...string) string {
		items := ""
		for i, n := range names {
			if i > 0 {
				items += ","
			}
			items += `{"metadata":{"name":"` + n + `","namespace":"shop"}}`
		}
		return `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"continue":"more"},"items":[` + items + `]}`
	}
	many := make([]string, 3000)
	for i := range many {
		many[i] = "web-" + strings.Repeat("x", i%40)
	}
	answers := []string{page("a"), page(many...), page("b", "c")}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls == len(answers) {
			w.WriteHeader(http.StatusGone)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"continue token expired"}`)
			return
		}
		_, _ = io.WriteString(w, answers[calls])
		calls++
	}))
	defer srv.Close()
	l, err := NewRawLister(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	ctx := context.Background()
	for _, want := range [][]string{{"a"}, many, {"b", "c"}} {
		p, err := l.List(ctx, deployments, ListOptions{Namespace: "shop", Limit: 500})
		require.NoError(t, err)
		require.Len(t, p.Items, len(want))
		for i, it := range p.Items {
			require.Equal(t, want[i], it.Name)
		}
		assert.Equal(t, "more", p.Continue)
	}
	_, err = l.List(ctx, deployments, ListOptions{Namespace: "shop", Continue: "more"})
	assert.True(t, apierrors.IsResourceExpired(err), "got %v", err)
	assert.ErrorContains(t, err, "continue token expired", "the server's message is kept")
}
