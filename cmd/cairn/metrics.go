package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/metrics"
)

// serveMetrics serves this process's Prometheus metrics on addr until ctx
// ends. It returns once the port is bound, so a wrong address fails the
// command at start.
func serveMetrics(ctx context.Context, addr string, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	url, err := serveHTTP(ctx, "metrics", addr, mux, log)
	if err != nil {
		return err
	}
	log.Info("Metrics listening", zap.String("address", url+"/metrics"))
	return nil
}

// serveHTTP serves h, the listener of what, on addr until ctx ends, and
// returns the base URL once the port is bound.
func serveHTTP(ctx context.Context, what, addr string, h http.Handler, log *zap.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s listener: %w", what, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", zap.String("address", ln.Addr().String()), zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return "http://" + ln.Addr().String(), nil
}
