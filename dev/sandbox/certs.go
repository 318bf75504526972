package sandbox

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/cairn-backup/cairn/internal/atomicfile"
	"github.com/cairn-backup/cairn/internal/pki"
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
	ca, err := pki.NewCA("cairn-sandbox-ca")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	serving, err := ca.Issue(pki.Leaf{CommonName: "kube-apiserver", IPs: servingIPs, DNSNames: servingDNS, Server: true})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	kubeletClient, err := ca.Issue(pki.Leaf{CommonName: "kube-apiserver-kubelet-client", Organizations: []string{"system:masters"}, Client: true})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	sa, err := pki.SelfSigned("service-accounts")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	for name, data := range map[string][]byte{
		servingCA: ca.CertPEM, servingCertFile: serving.CertPEM, servingKeyFile: serving.KeyPEM,
		saSigningCert: sa.CertPEM, saSigningKey: sa.KeyPEM,
		kubeletClientCert: kubeletClient.CertPEM, kubeletClientKey: kubeletClient.KeyPEM,
	} {
		if err := atomicfile.Write(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	return ca.CertPEM, nil
}
