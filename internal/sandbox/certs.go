package sandbox

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
	"path/filepath"
	"time"

	"github.com/cairn-backup/cairn/internal/atomicfile"
)

// KubernetesServiceIP is the ClusterIP of the "kubernetes" Service in
// default, the first address of ServiceSubnet: what in-cluster clients
// dial (KUBERNETES_SERVICE_HOST).
const KubernetesServiceIP = "10.0.0.1"

// The files envtest reads from the API server's cert dir. envtest makes
// them itself only when apiserver.crt is missing, and then signs for
// 127.0.0.1 and localhost alone; a pod dials the API server at
// KubernetesServiceIP, so the sandbox writes them all.
const (
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saSigningCert   = "sa-signer.crt"
	// kubeletClientCert and its key are how the API server proves itself
	// to the kubelet (logs, exec), which lets nobody else in.
	kubeletClientCert = "kubelet-client.crt"
	kubeletClientKey  = "kubelet-client.key"
	saSigningKey      = "sa-signer.key"
	// servingCA is the serving CA's certificate (cairn's own name).
	servingCA = "ca.crt"
)

// certValidity outlives any sandbox: certificates are renewed at every Start.
const certValidity = 10 * 365 * 24 * time.Hour

// servingNames are the API server's names in its serving certificate: on
// this machine, on the node's bridge, and as the kubernetes Service.
var (
	servingIPs = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP), net.ParseIP(KubernetesServiceIP)}
	servingDNS = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local"}
)

// writeAPIServerCerts writes a fresh serving CA's certificate, the serving
// and kubelet client certificates and keys it signs, and the service
// account signing key pair into dir, and returns the CA's certificate
// (PEM).
func writeAPIServerCerts(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: CA key: %w", err)
	}
	caTemplate := certTemplate("cairn-sandbox-ca")
	caTemplate.IsCA = true
	caTemplate.BasicConstraintsValid = true
	caTemplate.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("sandbox: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("sandbox: CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: serving key: %w", err)
	}
	serving := certTemplate("kube-apiserver")
	serving.KeyUsage = x509.KeyUsageDigitalSignature
	serving.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	serving.IPAddresses = servingIPs
	serving.DNSNames = servingDNS
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, ca, servingKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("sandbox: serving certificate: %w", err)
	}

	kubeletKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: kubelet client key: %w", err)
	}
	kubeletClient := certTemplate("kube-apiserver-kubelet-client")
	kubeletClient.Subject.Organization = []string{"system:masters"}
	kubeletClient.KeyUsage = x509.KeyUsageDigitalSignature
	kubeletClient.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	kubeletDER, err := x509.CreateCertificate(rand.Reader, kubeletClient, ca, kubeletKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("sandbox: kubelet client certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: service account signing key: %w", err)
	}
	sa := certTemplate("service-accounts")
	saDER, err := x509.CreateCertificate(rand.Reader, sa, sa, saKey.Public(), saKey)
	if err != nil {
		return nil, fmt.Errorf("sandbox: service account certificate: %w", err)
	}

	caPEM := pemBlock("CERTIFICATE", caDER)
	for name, data := range map[string][]byte{servingCA: caPEM, servingCertFile: pemBlock("CERTIFICATE", servingDER),
		saSigningCert: pemBlock("CERTIFICATE", saDER), kubeletClientCert: pemBlock("CERTIFICATE", kubeletDER)} {
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	for name, key := range map[string]crypto.Signer{servingKeyFile: servingKey, saSigningKey: saKey, kubeletClientKey: kubeletKey} {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w", name, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, name), pemBlock("PRIVATE KEY", der), 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	return caPEM, nil
}

func certTemplate(commonName string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity)}
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
