package httpapi

import (
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// browserGuard refuses what a web page open in the user's browser could
// make it send to the API, which a browser lets any page do without
// asking the server first: a body that is not JSON (a form or text/plain
// POST), and a request that says it comes from another site (Origin, or
// Sec-Fetch-Site). Clients that are not browsers send neither header.
func browserGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossSite(r) {
			writeRefusal(w, http.StatusForbidden, "Forbidden", "cross-site requests are refused")
			return
		}
		if unsafeMethod(r.Method) && hasBody(r) && !isJSON(r.Header.Get("Content-Type")) {
			writeRefusal(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "the request body must be application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHostsOnly refuses a request whose Host is not a loopback name
// or address. An API listening on 127.0.0.1 needs it: a page of another
// site can rebind its own name to 127.0.0.1 (DNS rebinding) and then call
// the API as "same-origin", but the Host it sends is still its own name.
func LoopbackHostsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) {
			writeRefusal(w, http.StatusForbidden, "Forbidden", "this API answers only to localhost, 127.0.0.1 or [::1]")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeRefusal(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg, Type: typ})
}
