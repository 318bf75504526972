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

// TestListTellsWhereTheNextPageStartsBeforeTheItems: the server sends a
// list's metadata and holds its items back until the next page's start
// has been heard of; a list whose items come first is heard of at its
// end, and a page that fails is never heard of.
func TestListTellsWhereTheNextPageStartsBeforeTheItems(t *testing.T) {
	heard := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("continue") {
		case "":
			_, _ = io.WriteString(w, `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"continue":"page-2"},"items":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // held until the client gives up, unless heard of
		case "page-2":
			_, _ = io.WriteString(w, `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"continue":"page-3"},"items":[`)
			w.(http.Flusher).Flush()
			select {
			case <-heard:
				_, _ = io.WriteString(w, `{"metadata":{"name":"web","namespace":"shop"}}]}`)
			case <-r.Context().Done():
			}
		case "page-3":
			_, _ = io.WriteString(w, `{"apiVersion":"apps/v1","items":[{"metadata":{"name":"db"}}],"kind":"DeploymentList","metadata":{}}`)
		case "broken":
			_, _ = io.WriteString(w, `{"kind":"DeploymentList","items":[{"metadata":{"name":"x"}}`)
		}
	}))
	defer srv.Close()
	l, err := NewRawLister(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	ctx := context.Background()
	tell := func(token string) { heard <- token }

	// Told only at the end, the list would wait for items that never
	// come, until go test's timeout fails the package.
	page, err := l.List(ctx, deployments, ListOptions{Continue: "page-2", Continued: tell})
	require.NoError(t, err, "the items came once the token was heard")
	require.Len(t, page.Items, 1)
	assert.Equal(t, "page-3", page.Continue)

	page, err = l.List(ctx, deployments, ListOptions{Continue: "page-3", Continued: tell})
	require.NoError(t, err)
	assert.Equal(t, "db", page.Items[0].Name)
	assert.Equal(t, "", <-heard, "the last page, heard of at its end")

	_, err = l.List(ctx, deployments, ListOptions{Continue: "broken", Continued: tell})
	require.Error(t, err)
	assert.Empty(t, heard, "a failed page with its items first is not heard of")

	cctx, cancel := context.WithCancel(ctx)
	_, err = l.List(cctx, deployments, ListOptions{Continued: func(token string) {
		assert.Equal(t, "page-2", token)
		cancel() // the client gives up on a page held back
	}})
	require.Error(t, err)
}
