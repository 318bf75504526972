// Package pki issues short chains of trust: a CA, and the serving and
// client certificates it signs. The webhook uses it for its loopback
// listener, the sandbox and tests for their servers.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// validity outlives any sandbox or test: certificates are made anew at
// every start.
const validity = 10 * 365 * 24 * time.Hour

// CA signs certificates.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA's certificate, for whoever verifies what it signs.
	CertPEM []byte
}

// Leaf is what a certificate says of its holder.
type Leaf struct {
	CommonName    string
	Organizations []string
	IPs           []net.IP
	DNSNames      []string
	// Server and Client are the uses it is good for.
	Server, Client bool
}

// Pair is a certificate and its private key, both PEM.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// NewCA makes a CA with a fresh key.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := template(commonName)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, CertPEM: Encode("CERTIFICATE", der)}, nil
}

// Issue signs a certificate for a fresh key.
func (ca *CA) Issue(l Leaf) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("key of %s: %w", l.CommonName, err)
	}
	tmpl := template(l.CommonName)
	tmpl.Subject.Organization = l.Organizations
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.IPAddresses, tmpl.DNSNames = l.IPs, l.DNSNames
	if l.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("certificate of %s: %w", l.CommonName, err)
	}
	keyPEM, err := KeyPEM(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: Encode("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// SelfSigned is a self-signed certificate and key, e.g. the service
// account signer's.
func SelfSigned(commonName string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("key of %s: %w", commonName, err)
	}
	tmpl := template(commonName)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return Pair{}, fmt.Errorf("certificate of %s: %w", commonName, err)
	}
	keyPEM, err := KeyPEM(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: Encode("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// KeyPEM is a private key in PKCS #8, PEM-encoded.
func KeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return Encode("PRIVATE KEY", der), nil
}

// Encode is one PEM block.
func Encode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func template(commonName string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity)}
}
