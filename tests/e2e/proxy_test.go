package e2e

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// tcpProxy forwards loopback connections to target until cut, after which
// the target looks unreachable (connections refused) to whoever uses it.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveProxy(t, ln, target)
}

// newTLSProxy is a proxy on host that ends TLS, as cfg says, in front of
// target.
func newTLSProxy(t *testing.T, host, target string, cfg *tls.Config) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	return serveProxy(t, tls.NewListener(ln, cfg), target)
}

func serveProxy(t *testing.T, ln net.Listener, target string) *tcpProxy {
	p := &tcpProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// cut closes the listener and every open connection.
func (p *tcpProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
