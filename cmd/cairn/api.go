package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/starter"
)

func newAPICommand(g *globals) *cobra.Command {
	var listen string
	var printOpenAPI bool
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve the HTTP starter API against an existing Temporal cluster",
		Long: `Serves the HTTP starter API: start, inspect, cancel and delete backups,
restores, schedules and etcd snapshots, plus /metrics and /healthz.

GET /openapi.json describes every route, its body and its answers as an
OpenAPI 3 document; --print-openapi prints it without a server, e.g. to
generate a client. Errors are JSON with a type; statuses are 400 (invalid),
404, 409 (conflict), 503 (Temporal unreachable).`,
		Example: `  cairn api --listen 127.0.0.1:8080
  curl -X POST localhost:8080/v1/backups -d '{"name":"shop-1","includedNamespaces":["shop"]}'
  curl -X POST localhost:8080/v1/restores -d '{"name":"shop-r1","backupName":"shop-1","namespaceMapping":{"shop":"shop-copy"}}'
  curl localhost:8080/openapi.json
  cairn api --print-openapi > cairn-openapi.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printOpenAPI {
				doc, err := starter.OpenAPI()
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(doc))
				return err
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			sc, tc, err := g.starterClient()
			if err != nil {
				return err
			}
			defer tc.Close()
			return serveAPI(cmd.Context(), listen, sc, log)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address of the HTTP starter API")
	cmd.Flags().BoolVar(&printOpenAPI, "print-openapi", false, "print the API's OpenAPI 3 document and exit")
	return cmd
}

// serveAPI serves the starter API on addr until ctx ends.
func serveAPI(ctx context.Context, addr string, sc *starter.Client, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("starter API: %w", err)
	}
	handler := starter.Handler(sc, log)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		handler = starter.LoopbackHostsOnly(handler)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	log.Info("Starter API listening", zap.String("address", "http://"+ln.Addr().String()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("starter API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop starter API: %w", err)
	}
	return nil
}
