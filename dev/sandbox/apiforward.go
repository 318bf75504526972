package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"go.uber.org/zap"
)

// apiForwarder brings pods to the API server. The API server listens on
// 127.0.0.1 only, which a pod's network namespace cannot reach, and
// advertises NodeIP as the "kubernetes" Service's endpoint; kube-proxy
// sends the Service's ClusterIP there, and the forwarder, listening on the
// node's bridge address with the API server's port, copies each
// connection to the API server. TLS passes through untouched.
type apiForwarder struct {
	ln     net.Listener
	target string
	log    *zap.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startAPIForwarder listens on NodeIP at the port of target (host:port on
// loopback). The bridge must have its address.
func startAPIForwarder(target string, log *zap.Logger) (*apiForwarder, error) {
	_, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("sandbox node: API server address %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(NodeIP, port))
	if err != nil {
		return nil, fmt.Errorf("sandbox node: forward the API server to the bridge: %w", err)
	}
	f := &apiForwarder{ln: ln, target: target, log: log, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	log.Info("API server forwarded to the node's bridge", zap.String("listen", ln.Addr().String()), zap.String("to", target))
	return f, nil
}

func (f *apiForwarder) serve() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				f.log.Warn("API forwarder stops accepting", zap.Error(err))
			}
			return
		}
		if !f.track(conn) {
			_ = conn.Close()
			return
		}
		f.wg.Add(1)
		go f.forward(conn)
	}
}

// forward copies conn both ways to the API server until either side ends.
func (f *apiForwarder) forward(conn net.Conn) {
	defer f.wg.Done()
	defer f.untrack(conn)
	upstream, err := net.Dial("tcp", f.target)
	if err != nil {
		f.log.Warn("API forwarder cannot reach the API server", zap.Error(err))
		return
	}
	if !f.track(upstream) {
		_ = upstream.Close()
		return
	}
	defer f.untrack(upstream)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(upstream, conn)
	go pipe(conn, upstream)
	<-done
	// One side ended: closing both (by untrack) ends the other copy.
}

func (f *apiForwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *apiForwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close()
}

// stop closes the listener and every connection, and waits for the
// forwarder's goroutines.
func (f *apiForwarder) stop() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	_ = f.ln.Close()
	f.wg.Wait()
}
