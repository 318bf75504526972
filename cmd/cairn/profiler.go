package main

import (
	"context"
	"net/http"
	"net/http/pprof"

	"go.uber.org/zap"
)

// serveProfiler serves Go's pprof endpoints (/debug/pprof/) on addr until
// ctx ends: CPU and heap profiles of a worker that is slow or grows. Like
// Velero's --profiler-address, but off unless asked for, as a profile
// shows what the process holds.
func serveProfiler(ctx context.Context, addr string, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	url, err := serveHTTP(ctx, "profiler", addr, mux, log)
	if err != nil {
		return err
	}
	log.Info("Profiler listening", zap.String("address", url+"/debug/pprof/"))
	return nil
}
