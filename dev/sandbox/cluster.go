// Package sandbox runs a real, local Kubernetes control plane for tests and
// for `cairn dev --sandbox`: etcd and kube-apiserver through
// controller-runtime's envtest, and kube-controller-manager as a child
// process, all on 127.0.0.1. There are no nodes, so pods never run, but
// namespaces are deleted, garbage is collected and PVCs bind as in a real
// cluster. With Options.CSI it also runs a CSI stack whose volumes and
// snapshots are directories: claims of CSIStorageClass are provisioned,
// snapshotted and restored by the real external-provisioner and
// external-snapshotter.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/atomicfile"
)

// AdminUser is the system:masters user of Config and KubeconfigPath.
const AdminUser = "cairn-admin"

// Cluster is a running sandbox control plane.
type Cluster struct {
	opts       Options
	cp         *controlPlane
	cm         *process
	csi        *csiStack // nil without Options.CSI
	node       *node     // nil without Options.Node
	cfg        *rest.Config
	cs         kubernetes.Interface
	kubeconfig string
	unlock     func()
	envtestLog *zap.Logger

	stopOnce sync.Once
	stopErr  error
}

// Start starts etcd, kube-apiserver and kube-controller-manager and returns
// once the API server serves and the controller-manager has garbage
// collected an object (see waitWorking). ctx bounds the start only
// (envtest's own start of etcd and kube-apiserver is not interruptible);
// the cluster runs until Stop.
//
// With Options.CSI, Start then installs the VolumeSnapshot CRDs, starts the
// CSI driver and its sidecars, creates CSIStorageClass and
// CSISnapshotClass, and returns once the driver answers and each sidecar
// has logged that it is up.
//
// If this process dies without Stop, the kernel kills the components (on
// Linux; etcd and kube-apiserver through setpriv, see launchers).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkBinDir(opts.BinDir, opts.CSI); err != nil {
		return nil, err
	}
	if opts.Node {
		if err := checkNodeTools(opts.BinDir); err != nil {
			return nil, err
		}
	}
	if err := opts.makeDataDir(); err != nil {
		return nil, err
	}
	opts.Log = opts.Log.Named("sandbox")

	c = &Cluster{opts: opts, kubeconfig: opts.path(kubeconfigFile), envtestLog: opts.Log.Named("envtest")}
	if c.unlock, err = lockDataDir(opts.path(lockFile)); err != nil {
		return nil, err
	}
	started := c // c is nil once a failure returns
	defer func() {
		if err != nil {
			err = errors.Join(err, started.Stop())
		}
	}()
	useControllerRuntimeLogger(c.envtestLog)
	start := time.Now()
	log := opts.Log.With(zap.String("dataDir", opts.DataDir))
	log.Info("starting sandbox cluster", zap.String("binDir", opts.BinDir))

	if c.cp, err = startControlPlane(opts); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	cfg, kubeconfig, err := c.cp.addAdmin(AdminUser)
	if err != nil {
		return nil, err
	}
	c.cfg = cfg
	if err := atomicfile.Write(c.kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	apiReady := time.Since(start)

	c.cm, err = startControllerManager(controllerManagerConfig{
		binDir:     opts.BinDir,
		kubeconfig: c.kubeconfig,
		logPath:    opts.path(controllerLog),
		certDir:    c.cp.certDir(),
		node:       opts.Node,
	}, opts.Log)
	if err != nil {
		return nil, err
	}
	if c.cs, err = kubernetes.NewForConfig(c.Config()); err != nil {
		return nil, fmt.Errorf("sandbox: client: %w", err)
	}
	if err := waitWorking(ctx, c.cs, c.cm, opts.Log); err != nil {
		return nil, err
	}
	// The node first: the CSI driver registers with its kubelet.
	registrationDir := ""
	if opts.Node {
		apiURL, err := url.Parse(cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("sandbox: API server address: %w", err)
		}
		if c.node, err = startNode(ctx, c, nodeConfig{binDir: opts.BinDir, dataDir: opts.DataDir, kubeconfig: c.kubeconfig,
			cairnBinary: opts.CairnBinary, apiServer: apiURL.Host, clientCA: filepath.Join(c.cp.certDir(), servingCA)}); err != nil {
			return nil, err
		}
		registrationDir = c.node.registrationDir()
	}
	if opts.CSI {
		c.csi = &csiStack{stateDir: opts.path(csiStateDir), log: opts.Log.Named("csi")}
		if err := c.csi.start(ctx, c, csiConfig{
			binDir:          opts.BinDir,
			dataDir:         opts.DataDir,
			kubeconfig:      c.kubeconfig,
			registrationDir: registrationDir,
		}); err != nil {
			return nil, err
		}
	}
	log.Info("sandbox cluster ready",
		zap.String("host", cfg.Host),
		zap.String("kubeconfig", c.kubeconfig),
		zap.Bool("csi", opts.CSI),
		zap.Bool("node", opts.Node),
		zap.Duration("apiserverReady", apiReady),
		zap.Duration("took", time.Since(start)))
	return c, nil
}

// Config returns a copy of the admin (system:masters) client config, with
// envtest's generous client-side rate limits (QPS 1000, burst 2000).
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// KubeconfigPath returns DataDir/kubeconfig, a kubeconfig for the admin
// user that other processes can use (mode 0600, rewritten at every Start).
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// DataDir returns the absolute data directory, where the components' logs
// are.
func (c *Cluster) DataDir() string { return c.opts.DataDir }

// Stop stops the CSI sidecars and driver (with Options.CSI),
// kube-controller-manager, kube-apiserver and etcd, in that order, each with
// SIGTERM and then SIGKILL after a grace period. etcd's data and the CSI
// driver's volumes stay in DataDir. Stop is idempotent and safe to call
// concurrently.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		start := time.Now()
		var errs []error
		if c.node != nil {
			errs = append(errs, c.node.stop())
		}
		if c.csi != nil {
			errs = append(errs, c.csi.stop())
		}
		if c.cm != nil {
			errs = append(errs, c.cm.Stop())
		}
		if c.cp != nil {
			errs = append(errs, c.cp.stop())
		}
		if c.unlock != nil {
			c.unlock()
		}
		releaseControllerRuntimeLogger(c.envtestLog)
		c.stopErr = errors.Join(errs...)
		c.opts.Log.Info("sandbox cluster stopped", zap.String("dataDir", c.opts.DataDir),
			zap.Duration("took", time.Since(start)), zap.Error(c.stopErr))
	})
	return c.stopErr
}

// EtcdEndpoint is the client URL of the sandbox's etcd (plain HTTP on
// 127.0.0.1), for etcd snapshots of the sandbox itself.
func (c *Cluster) EtcdEndpoint() string {
	if u := c.cp.env.ControlPlane.Etcd.URL; u != nil {
		return u.String()
	}
	return ""
}
