package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cairn-backup/cairn/deploy"
)

const (
	// componentStartTimeout bounds each of etcd's and kube-apiserver's
	// start (envtest's default of 20 s is tight on a busy 2-core machine;
	// envtest retries a failed start up to 5 times).
	componentStartTimeout = 60 * time.Second
	// componentStopTimeout bounds each one's stop before envtest kills it.
	componentStopTimeout = 20 * time.Second
)

// controlPlane is etcd and kube-apiserver run by envtest.
type controlPlane struct {
	env  *envtest.Environment
	logs []*os.File
}

// startControlPlane starts etcd and kube-apiserver on 127.0.0.1 with their
// files under opts.DataDir, and returns once the API server is healthy and
// serves the default namespace.
func startControlPlane(opts Options) (cp *controlPlane, err error) {
	certDir := opts.path(apiserverDir)
	// envtest reuses an existing apiserver.crt but then never learns its CA:
	// every Start gets fresh certificates.
	if err := os.RemoveAll(certDir); err != nil {
		return nil, fmt.Errorf("sandbox: clear %s: %w", certDir, err)
	}
	for _, dir := range []string{certDir, opts.path(etcdDataDir)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: create %s: %w", dir, err)
		}
	}
	ca, err := writeAPIServerCerts(certDir)
	if err != nil {
		return nil, err
	}
	cp = &controlPlane{}
	logs := cp // a failed start returns a nil cp, and still closes these
	defer func() {
		if err != nil {
			logs.closeLogs()
		}
	}()
	etcdOut, err := cp.openLog(opts.path(etcdLog))
	if err != nil {
		return nil, fmt.Errorf("sandbox: etcd: %w", err)
	}
	apiOut, err := cp.openLog(opts.path(apiserverLog))
	if err != nil {
		return nil, fmt.Errorf("sandbox: kube-apiserver: %w", err)
	}

	etcdPath, apiPath := launchers(opts.Log, opts.BinDir, opts.DataDir)
	useExisting := false
	// cairn's own resources are served as the chart serves them.
	crds, err := deploy.CRDs()
	if err != nil {
		return nil, fmt.Errorf("sandbox: cairn's CRDs: %w", err)
	}
	cp.env = &envtest.Environment{
		CRDs:                     crds,
		BinaryAssetsDirectory:    opts.BinDir,
		UseExistingCluster:       &useExisting, // ignore $USE_EXISTING_CLUSTER
		ControlPlaneStartTimeout: componentStartTimeout,
		ControlPlaneStopTimeout:  componentStopTimeout,
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    etcdPath,
				DataDir: opts.path(etcdDataDir),
				Out:     etcdOut,
				Err:     etcdOut,
			},
			APIServer: &envtest.APIServer{
				Path:    apiPath,
				CertDir: certDir,
				Out:     apiOut,
				Err:     apiOut,
				// Ports and addresses are left to envtest: it binds
				// "localhost" (127.0.0.1) and keeps the ports it hands out
				// reserved across processes for a while.
			},
		},
	}
	cp.env.ControlPlane.APIServer.SecureServing.CA = ca
	apiserver := cp.env.ControlPlane.APIServer.Configure()
	// The "kubernetes" Service's endpoint. Without a node, keep it on
	// loopback (else the API server advertises the host's first address);
	// with one, it is the node's bridge address, where apiForwarder
	// brings the pods' connections to the API server on 127.0.0.1.
	advertise := "127.0.0.1"
	if opts.Node {
		advertise = NodeIP
		// envtest turns it off; pods need it for their service account
		// tokens (in-cluster config), as in any real cluster.
		apiserver.Disable("disable-admission-plugins")
	}
	apiserver.Set("advertise-address", advertise)
	// The node's name resolves nowhere; its InternalIP is where the API
	// server reaches the kubelet for logs and exec.
	apiserver.Set("kubelet-preferred-address-types", "InternalIP")
	apiserver.Set("kubelet-client-certificate", filepath.Join(certDir, kubeletClientCert))
	apiserver.Set("kubelet-client-key", filepath.Join(certDir, kubeletClientKey))
	apiserver.Set("service-cluster-ip-range", ServiceSubnet)
	if opts.EtcdQuotaBytes > 0 {
		cp.env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(opts.EtcdQuotaBytes, 10))
	}
	if _, err := cp.env.Start(); err != nil {
		stopErr := cp.env.Stop()
		return nil, fmt.Errorf("sandbox: start etcd and kube-apiserver (logs in %s): %w",
			opts.DataDir, errors.Join(err, stopErr))
	}
	opts.Log.Info("sandbox control plane up",
		zap.String("apiserver", cp.env.Config.Host),
		zap.String("etcd", cp.env.ControlPlane.Etcd.URL.String()))
	return cp, nil
}

func (cp *controlPlane) openLog(path string) (*os.File, error) {
	f, err := openLog(path)
	if err != nil {
		return nil, err
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

// addAdmin provisions a system:masters user and returns its config and
// kubeconfig.
func (cp *controlPlane) addAdmin(name string) (*rest.Config, []byte, error) {
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}},
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: add user %s: %w", name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: kubeconfig for %s: %w", name, err)
	}
	return user.Config(), kubeconfig, nil
}

// certDir holds the API server's certificates and keys.
func (cp *controlPlane) certDir() string { return cp.env.ControlPlane.APIServer.CertDir }

// stop stops kube-apiserver, then etcd, then closes their logs.
func (cp *controlPlane) stop() error {
	err := cp.env.Stop()
	cp.closeLogs()
	if err != nil {
		return fmt.Errorf("sandbox: stop etcd and kube-apiserver: %w", err)
	}
	return nil
}

func (cp *controlPlane) closeLogs() {
	for _, f := range cp.logs {
		f.Close()
	}
	cp.logs = nil
}
