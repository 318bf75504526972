// Package devserver runs a persistent Temporal server inside the process:
// frontend, history, matching and worker services with SQLite storage in
// one file, plus the Temporal Web UI. It is what `cairn dev` runs; in
// production cairn points at an existing Temporal cluster instead.
package devserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-backup/cairn/internal/logging"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// setupTimeout bounds the wait for the started server to serve the
// namespace, when the caller's context allows longer.
const setupTimeout = 2 * time.Minute

// Server is a running embedded Temporal server.
type Server struct {
	log       *zap.Logger
	serverLog *serverLog
	temporal  temporal.Server
	ui        *webUI
	frontend  string

	stopOnce sync.Once
	stopErr  error
}

// Start creates the database if needed, starts the server and the UI,
// ensures the namespace, its retention and its search attributes, and
// returns once a client can use the namespace. ctx bounds that setup; the
// server keeps running after ctx ends, until Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	log := opts.Log.Named("devserver")
	began := time.Now()

	// Ports stay reserved until just before their server binds them; the
	// UI's is held apart because the UI starts last.
	var ports, uiPorts portPicker
	defer ports.release()
	defer uiPorts.release()
	frontend, err := ports.resolve(opts.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("devserver: frontend: %w", err)
	}
	var uiAddr hostPort
	if opts.UIAddr != "" {
		if uiAddr, err = uiPorts.resolve(opts.UIAddr); err != nil {
			return nil, fmt.Errorf("devserver: ui: %w", err)
		}
	}
	l, err := pickLayout(&ports, frontend)
	if err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}

	sql := sqlConfig(opts.dbPath())
	if err := prepareStore(log, opts.dbPath(), sql, opts.Namespace, opts.Retention); err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	// The services bind their ports while the server is built, not when
	// it starts.
	ports.release()
	srv, srvLog, err := launchTemporal(opts.Log, l, sql)
	if err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	s := &Server{log: log, serverLog: srvLog, temporal: srv, frontend: frontend.dialAddr()}
	if err := s.setup(ctx, opts, &uiPorts, uiAddr); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("devserver: %w", err)
	}
	log.Info("temporal dev server started",
		zap.String("frontend", s.frontend),
		zap.String("ui", s.UIAddress()),
		zap.String("db", opts.dbPath()),
		zap.Duration("took", time.Since(began)))
	return s, nil
}

// setup waits for the frontend, applies the namespace settings and starts
// the UI.
func (s *Server) setup(ctx context.Context, opts Options, uiPorts *portPicker, uiAddr hostPort) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	c, err := dialReady(ctx, client.Options{
		HostPort:  s.frontend,
		Namespace: opts.Namespace,
		Logger:    logging.NewTemporalLogger(opts.Log.Named("devserver.client").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel))),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := ensureRetention(ctx, s.log, c, opts.Namespace, opts.Retention); err != nil {
		return err
	}
	if err := ensureSearchAttributes(ctx, s.log, c, opts.Namespace, opts.SearchAttributes); err != nil {
		return err
	}
	if opts.UIAddr == "" {
		return nil
	}
	uiPorts.release()
	s.ui, err = startUI(ctx, s.log, uiConfig(uiAddr, s.frontend, opts.Namespace))
	return err
}

// FrontendAddress is the host:port the gRPC frontend listens on, for
// client.Options.HostPort.
func (s *Server) FrontendAddress() string { return s.frontend }

// UIAddress is the Web UI's base URL, such as "http://127.0.0.1:8233", or
// "" when the server runs without UI.
func (s *Server) UIAddress() string {
	if s.ui == nil {
		return ""
	}
	return s.ui.url
}

// Stop shuts down the UI and the server. It is safe to call more than
// once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		began := time.Now()
		s.serverLog.muted.Store(true)
		if s.ui != nil {
			s.ui.stop()
		}
		if err := s.temporal.Stop(); err != nil {
			s.stopErr = fmt.Errorf("devserver: stop temporal server: %w", err)
		}
		s.log.Info("temporal dev server stopped", zap.Duration("took", time.Since(began)))
	})
	return s.stopErr
}
