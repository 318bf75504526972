package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// stopGrace is how long stop waits for calls in flight before cutting them
// off.
const stopGrace = 5 * time.Second

type config struct {
	endpoint string // a socket path or unix:///path; "" for the layout's SocketPath
	stateDir string
	nodeID   string
	// registrationDir is the kubelet's plugin registration directory; ""
	// when there is no kubelet to register with.
	registrationDir string
	now             func() time.Time // the driver's clock; nil for time.Now
}

// driver is the CSI gRPC server on its unix socket.
type driver struct {
	srv      *grpc.Server
	socket   string
	served   chan struct{} // closed when Serve returns
	serveErr error         // what Serve returned
	// stopRegistration stops serving the kubelet's registration socket.
	stopRegistration func()
}

// startDriver opens the state directory, listens on the socket (replacing a
// stale one) and serves in the background; the socket accepts connections
// when it returns.
func startDriver(cfg config, logger *log.Logger) (*driver, error) {
	if cfg.stateDir == "" {
		return nil, errors.New("--state-dir is required")
	}
	stateDir, err := filepath.Abs(cfg.stateDir)
	if err != nil {
		return nil, err
	}
	st, err := openStore(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	socket, err := socketPath(cfg.endpoint, stateDir)
	if err != nil {
		return nil, err
	}
	lis, err := listenUnix(socket)
	if err != nil {
		return nil, err
	}
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls(logger)))
	csi.RegisterIdentityServer(srv, identityServer{})
	csi.RegisterControllerServer(srv, &controllerServer{store: st, now: now})
	csi.RegisterNodeServer(srv, nodeServer{nodeID: cfg.nodeID, stateDir: stateDir})
	d := &driver{srv: srv, socket: socket, served: make(chan struct{}), stopRegistration: func() {}}
	if cfg.registrationDir != "" {
		if d.stopRegistration, err = serveRegistration(cfg.registrationDir, socket, logger); err != nil {
			lis.Close()
			return nil, fmt.Errorf("kubelet registration: %w", err)
		}
	}
	go func() {
		d.serveErr = srv.Serve(lis)
		close(d.served)
	}()
	logger.Printf("serving %s on %s, state in %s", csistate.DriverName, socket, stateDir)
	return d, nil
}

// stop lets calls in flight finish for up to stopGrace, then closes the
// server and removes the socket.
func (d *driver) stop() {
	d.stopRegistration()
	done := make(chan struct{})
	go func() {
		d.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopGrace):
		d.srv.Stop()
		<-done
	}
	// Serve closes the listener itself when stop came first.
	<-d.served
	_ = os.Remove(d.socket) // the listener usually removed it already
}

// socketPath turns the --endpoint flag into a socket path.
func socketPath(endpoint, stateDir string) (string, error) {
	if endpoint == "" {
		return csistate.Layout{Dir: stateDir}.SocketPath(), nil
	}
	path := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		path = rest
	} else if rest, ok := strings.CutPrefix(endpoint, "unix:"); ok {
		path = rest
	} else if strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("endpoint %q: only unix sockets are served", endpoint)
	}
	if path == "" {
		return "", fmt.Errorf("endpoint %q names no socket", endpoint)
	}
	if len(path) > csistate.MaxSocketPathLen {
		return "", fmt.Errorf("socket path %s is %d bytes, longer than unix sockets allow (%d); use a shorter --endpoint", path, len(path), csistate.MaxSocketPathLen)
	}
	return path, nil
}

// listenUnix listens on socket, first removing a socket file left by an
// earlier run. Anything else at that path is left alone and is an error.
func listenUnix(socket string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		return nil, err
	}
	info, err := os.Lstat(socket)
	switch {
	case err == nil && info.Mode().Type() == fs.ModeSocket:
		if err := os.Remove(socket); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	case err == nil:
		return nil, fmt.Errorf("%s exists and is not a socket", socket)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return net.Listen("unix", socket)
}
