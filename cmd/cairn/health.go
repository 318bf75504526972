package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/clock"
)

// healthCheckTimeout bounds one readiness probe's call to Temporal.
const healthCheckTimeout = 3 * time.Second

// health answers the kubelet's probes of a worker: /healthz while the
// process runs, /readyz while Temporal answers it. A worker that cannot
// reach Temporal stays up and unready, saying why, instead of
// restarting in a loop.
type health struct {
	address string
	mu      sync.Mutex
	client  client.Client
	why     string
}

func newHealth(address string) *health {
	return &health{address: address, why: "connecting to Temporal at " + address}
}

func (h *health) connected(c client.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.client = c
}

func (h *health) unreachable(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.why = fmt.Sprintf("Temporal at %s: %v", h.address, err)
}

// ready is "" when Temporal answers, else why not.
func (h *health) ready(ctx context.Context) string {
	h.mu.Lock()
	c, why := h.client, h.why
	h.mu.Unlock()
	if c == nil {
		return why
	}
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Sprintf("Temporal at %s: %v", h.address, err)
	}
	return ""
}

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := h.ready(r.Context()); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serve starts the probes' server on addr.
func (h *health) serve(ctx context.Context, addr string, log *zap.Logger) error {
	url, err := serveHTTP(ctx, "health", addr, h.handler(), log)
	if err != nil {
		return err
	}
	log.Info("Health probes listening", zap.String("liveness", url+"/healthz"), zap.String("readiness", url+"/readyz"))
	return nil
}

// dialRetrying connects to Temporal, trying again with growing pauses
// (up to 30s) until it answers or ctx ends. Each failure is logged with
// the address, which is what a wrong one needs.
func (g *globals) dialRetrying(ctx context.Context, h *health, log *zap.Logger) (client.Client, error) {
	// Files that do not load will not load on a retry either.
	if _, err := g.tlsConfig(); err != nil {
		return nil, err
	}
	pause := time.Second
	for {
		c, err := g.dial(log)
		if err == nil {
			h.connected(c)
			return c, nil
		}
		h.unreachable(err)
		log.Error("Temporal is not reachable; trying again", zap.String("address", g.temporalAddress),
			zap.String("namespace", g.temporalNamespace), zap.Duration("in", pause), zap.Error(err))
		if clock.Sleep(ctx, pause) != nil {
			return nil, err
		}
		pause = min(2*pause, 30*time.Second)
	}
}
