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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("Metrics listening", zap.String("address", "http://"+ln.Addr().String()+"/metrics"))
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("Metrics server stopped", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return nil
}
