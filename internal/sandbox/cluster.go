// Package sandbox runs a real, local Kubernetes control plane for tests and
// for `cairn dev --sandbox`: etcd and kube-apiserver through
// controller-runtime's envtest, and kube-controller-manager as a child
// process, all on 127.0.0.1. There are no nodes, so pods never run, but
// namespaces are deleted, garbage is collected and PVCs bind as in a real
// cluster.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AdminUser is the system:masters user of Config and KubeconfigPath.
const AdminUser = "cairn-admin"

// Cluster is a running sandbox control plane.
type Cluster struct {
	opts       Options
	cp         *controlPlane
	cm         *controllerManager
	cfg        *rest.Config
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
// If this process dies without Stop, the kernel kills the three components
// (on Linux; etcd and kube-apiserver through setpriv, see launchers).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckBinDir(opts.BinDir); err != nil {
		return nil, err
	}
	if err := opts.makeDataDir(); err != nil {
		return nil, err
	}
	opts.Log = opts.Log.Named("sandbox")

	c = &Cluster{opts: opts, kubeconfig: opts.path(kubeconfigFile), envtestLog: opts.Log.Named("envtest")}
	if c.unlock, err = lockDataDir(opts.path(lockFile)); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
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
	if err := writeFileAtomic(c.kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	apiReady := time.Since(start)

	c.cm, err = startControllerManager(controllerManagerConfig{
		binDir:     opts.BinDir,
		kubeconfig: c.kubeconfig,
		logPath:    opts.path(controllerLog),
		certDir:    c.cp.certDir(),
	}, opts.Log)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return nil, fmt.Errorf("sandbox: client: %w", err)
	}
	if err := waitWorking(ctx, cs, c.cm, opts.Log); err != nil {
		return nil, err
	}
	log.Info("sandbox cluster ready",
		zap.String("host", cfg.Host),
		zap.String("kubeconfig", c.kubeconfig),
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

// Stop stops kube-controller-manager, kube-apiserver and etcd, in that
// order, each with SIGTERM and then SIGKILL after a grace period. etcd's data
// stays in DataDir. Stop is idempotent and safe to call concurrently.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		start := time.Now()
		var errs []error
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
