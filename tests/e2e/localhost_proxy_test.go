package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localhostProxy is the URL of a plain-HTTP forward proxy that makes
// NAME.localhost:PORT reach 127.0.0.1:PORT, its Host header kept. Such
// names are loopback by RFC 6761, but Go's resolver looks them up in DNS.
// Azure's clients (gocloud's and kopia's) address a storage account by
// host name, ACCOUNT.blob.localhost:PORT here, and Azurite reads the
// account from the Host header, so an azblob:// location on Azurite is
// addressed the way a real one is, volume data included.
var localhostProxy string

// startLocalhostProxy starts the proxy and makes it this process's
// HTTP_PROXY. Go reads the proxy variables once per process, so the
// variable is set, read and removed again: this process keeps the proxy
// for plain-HTTP requests to hosts that are not loopback, and child
// processes get it only when a test gives it to them (azureEnv).
func startLocalhostProxy() (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localhost proxy: %w", err)
	}
	// An address (a pod's, say) is dialled as asked: to this process the
	// proxy is then only a hop. Its own requests go direct, or they would
	// come back to it. Other names are refused, not looked up: nothing a
	// test starts may reach off this machine through it.
	direct := http.DefaultTransport.(*http.Transport).Clone()
	direct.Proxy = nil
	forward := &httputil.ReverseProxy{Transport: direct, Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme = "http"
		if strings.HasSuffix(r.In.URL.Hostname(), ".localhost") && r.In.URL.Port() != "" {
			r.Out.URL.Host = net.JoinHostPort("127.0.0.1", r.In.URL.Port())
		}
		r.Out.Host = r.In.Host
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.URL.Hostname()
		if net.ParseIP(host) == nil && host != "localhost" && !strings.HasSuffix(host, ".localhost") {
			http.Error(w, "the e2e proxy reaches only this machine, not "+host, http.StatusForbidden)
			return
		}
		forward.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	localhostProxy = "http://" + ln.Addr().String()

	// A NO_PROXY of the machine's is left out of what this process
	// reads: it may well name localhost.
	saved := map[string]string{}
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"} {
		if v, ok := os.LookupEnv(name); ok {
			saved[name] = v
		}
		os.Unsetenv(name)
	}
	os.Setenv("HTTP_PROXY", localhostProxy)
	probe := &http.Request{URL: &url.URL{Scheme: "http", Host: "probe.localhost:1"}}
	proxy, err := http.ProxyFromEnvironment(probe)
	os.Unsetenv("HTTP_PROXY")
	for name, v := range saved {
		os.Setenv(name, v)
	}
	if err != nil || proxy == nil || proxy.String() != localhostProxy {
		srv.Close()
		return nil, fmt.Errorf("localhost proxy: this process reads its proxy as %v (%w): was HTTP_PROXY read before?", proxy, err)
	}
	return func() { srv.Close() }, nil
}

// TestLocalhostProxyReachesOnlyThisMachine: a name that is not loopback
// is refused, not looked up, and a NAME.localhost reaches 127.0.0.1 with
// its Host header kept.
func TestLocalhostProxyReachesOnlyThisMachine(t *testing.T) {
	t.Parallel()
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { host = r.Host }))
	defer srv.Close()
	proxyURL, err := url.Parse(localhostProxy)
	require.NoError(t, err)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	resp, err := c.Get("http://telemetry.example.com/track")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "reaches only this machine")

	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	resp, err = c.Get("http://account.blob.localhost:" + port + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "account.blob.localhost:"+port, host)
}
