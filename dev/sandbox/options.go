package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/dev/sandbox/paths"
)

// Options say where a sandbox cluster finds its binaries and keeps its files.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager
	// (built by tests/kube/build.sh). Empty means DefaultBinDir().
	BinDir string
	// DataDir receives the kubeconfig, the components' logs, the API
	// server's certificates and etcd's data. It is created if missing, and
	// etcd's data in it survives Stop, so a later Start resumes the cluster.
	// One running cluster per DataDir.
	DataDir string
	// Log receives the sandbox's own log lines. Nil means no logging.
	Log *zap.Logger
	// CSI also starts a CSI stack: the VolumeSnapshot CRDs, the sandbox's
	// CSI driver (tests/csidriver, volumes and snapshots are directories in
	// DataDir/csi), csi-provisioner, csi-snapshotter and snapshot-controller,
	// with StorageClass CSIStorageClass and VolumeSnapshotClass
	// CSISnapshotClass. Its binaries must be in BinDir (see CheckCSIBinDir).
	// It adds about a second to Start. On a fresh DataDir the API server
	// holds the first create of a VolumeSnapshot for 2 s, as it does for
	// any custom resource created within 2 s of its CRD being established.
	CSI bool
	// Node also runs one node, NodeName, where pods run: containerd with
	// the sandbox's own images (PauseImage, BusyboxImage), the kubelet,
	// kube-scheduler and kube-proxy, pods on bridge NodeBridge in
	// PodSubnet. One sandbox per machine may have a node; it needs root,
	// and the node's binaries (see checkNodeTools).
	Node bool
	// CairnBinary, with Node, is a static cairn binary the node has as
	// image CairnImage, for data mover pods.
	CairnBinary string
	// EtcdQuotaBytes raises etcd's space quota (its default is 2 GiB):
	// for clusters of a million objects. Zero keeps the default.
	EtcdQuotaBytes int64
}

// Files under Options.DataDir.
const (
	kubeconfigFile = paths.KubeconfigFile
	etcdDataDir    = "etcd"
	apiserverDir   = "apiserver" // certificates and keys, renewed at every Start
	wrapperDir     = "bin"       // launchers that tie etcd and kube-apiserver to this process
	lockFile       = "sandbox.lock"
	etcdLog        = "etcd.log"
	apiserverLog   = "kube-apiserver.log"
	controllerLog  = "kube-controller-manager.log"
	csiStateDir    = paths.CSIStateDir
)

func (o Options) withDefaults() (Options, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.DataDir == "" {
		return o, errors.New("sandbox: Options.DataDir is required")
	}
	if o.BinDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("sandbox: bin dir %q: %w", o.BinDir, err)
	}
	if o.DataDir, err = filepath.Abs(o.DataDir); err != nil {
		return o, fmt.Errorf("sandbox: data dir %q: %w", o.DataDir, err)
	}
	return o, nil
}

func (o Options) path(name string) string { return filepath.Join(o.DataDir, name) }

func (o Options) makeDataDir() error {
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("sandbox: create data dir: %w", err)
	}
	return nil
}
