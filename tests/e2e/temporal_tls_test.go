package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/pki"
)

// temporalServerName is the name in the mTLS proxy's certificate.
const temporalServerName = "temporal.cairn.test"

// mtlsTemporal puts a proxy in front of the stack's Temporal that lets in
// only clients with a certificate of its own CA, as a production Temporal
// with mTLS does. It listens on the node's address, which both the host
// and pods reach. It returns the proxy's address and the client's files,
// keyed as in a kubernetes.io/tls Secret.
func mtlsTemporal(t *testing.T, s *stack) (string, map[string][]byte) {
	t.Helper()
	ca, err := pki.NewCA("temporal-test-ca")
	require.NoError(t, err)
	server, err := ca.Issue(pki.Leaf{CommonName: temporalServerName, DNSNames: []string{temporalServerName},
		IPs: []net.IP{net.ParseIP(sandbox.NodeIP)}, Server: true})
	require.NoError(t, err)
	worker, err := ca.Issue(pki.Leaf{CommonName: "cairn-worker", Client: true})
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	require.True(t, clients.AppendCertsFromPEM(ca.CertPEM))
	proxy := newTLSProxy(t, sandbox.NodeIP, s.temporalAddr, &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients,
		NextProtos: []string{"h2"}, // gRPC insists on ALPN
	})

	// The proxy is no open door: a client without the certificate is
	// turned away.
	_, err = client.Dial(client.Options{HostPort: proxy.addr(), ConnectionOptions: client.ConnectionOptions{
		TLS: &tls.Config{MinVersion: tls.VersionTLS12, ServerName: temporalServerName, RootCAs: clients}}})
	require.Error(t, err, "a client without a certificate got through")
	return proxy.addr(), map[string][]byte{"tls.crt": worker.CertPEM, "tls.key": worker.KeyPEM, "ca.crt": ca.CertPEM}
}
