package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssuedCertificatesVerifyForTheirUseOnly(t *testing.T) {
	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM))

	server, err := ca.Issue(Leaf{CommonName: "server", IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"temporal.test"}, Server: true})
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	require.NoError(t, err, "the key belongs to the certificate")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "temporal.test", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.Error(t, err, "a serving certificate is no client certificate")

	other, err := NewCA("other-ca")
	require.NoError(t, err)
	otherRoots := x509.NewCertPool()
	require.True(t, otherRoots.AppendCertsFromPEM(other.CertPEM))
	_, err = leaf.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: "temporal.test"})
	assert.Error(t, err, "another CA does not vouch for it")
}
