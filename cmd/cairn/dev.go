//go:build devserver

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/devserver"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/sealing"
	"github.com/cairn-backup/cairn/starter/httpapi"
)

type devFlags struct {
	sandbox    bool
	node       bool
	kubeBinDir string
	uiAddress  string
	apiAddress string
	noWorker   bool
	noAPI      bool
	api        apiServeFlags
	worker     workerFlags
}

func newDevCommand(g *globals) *cobra.Command {
	df := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process: embedded Temporal with its UI, a worker and the starter API",
		Long: `Starts, in this one process:
  - a Temporal server listening on --temporal-address, persisted in SQLite at
    <data-dir>/temporal.db and its write-ahead log beside it (stop and start
    again, or kill it: every workflow is kept),
  - the Temporal Web UI on --ui-address,
  - a cairn worker and the starter API on --api-address.

With --sandbox it also starts a local Kubernetes control plane (etcd,
kube-apiserver, kube-controller-manager built by 'make sandbox-bins') and one
node where pods run (containerd, kubelet, kube-scheduler, kube-proxy; root
only, one per machine; --sandbox-node=false leaves it out), and backs it up;
its kubeconfig is written to <data-dir>/sandbox/kubeconfig. Without it,
the worker backs up the cluster of --kubeconfig / $KUBECONFIG.`,
		Example: `  cairn dev --sandbox
  cairn dev --data-dir /tmp/cairn --kubeconfig ~/.kube/kind.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			df.api.controller.namespace = g.controllerNamespace
			return runDev(cmd.Context(), g, df)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&df.sandbox, "sandbox", false, "start a local Kubernetes control plane and back it up")
	f.BoolVar(&df.node, "sandbox-node", true, "with --sandbox, also run a node where pods run (containerd, kubelet; needs root); =false leaves it out")
	f.StringVar(&df.kubeBinDir, "kube-bin-dir", "", "where the sandbox binaries are (default: .cache/kube/bin of the source tree, or $CAIRN_KUBE_BIN_DIR)")
	f.StringVar(&df.uiAddress, "ui-address", "127.0.0.1:8233", "address of the Temporal Web UI (empty: no UI)")
	f.StringVar(&df.apiAddress, "api-address", "127.0.0.1:8080", "address of the starter API (plain HTTP: keep it on loopback)")
	df.api.register(f, "api-")
	f.BoolVar(&df.noWorker, "no-worker", false, "do not run a worker in this process (run `cairn worker` separately)")
	f.BoolVar(&df.noAPI, "no-api", false, "do not serve the starter API")
	df.worker.register(cmd)
	return cmd
}

func runDev(ctx context.Context, g *globals, df *devFlags) error {
	if err := df.api.validate(); err != nil {
		return err
	}
	if err := df.worker.validate(); err != nil {
		return err
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(g.dataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range v1alpha1.SearchAttributeNames() {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir: g.dataDir, FrontendAddr: g.temporalAddress, UIAddr: df.uiAddress,
		Namespace: g.temporalNamespace, SearchAttributes: attrs, Log: log.Named("temporal"),
	})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	g.temporalAddress = srv.FrontendAddress()
	if srv.UIAddress() != "" {
		g.uiURL = srv.UIAddress()
	}

	kcfg, kubeDesc, stopKube, err := devCluster(ctx, g, df, log)
	if err != nil {
		return err
	}
	defer stopKube()

	catalog, err := g.catalog(df.api.allowLocationURLs)
	if err != nil {
		return err
	}
	keyID, err := devEncryptionKey(g)
	if err != nil {
		return err
	}
	sc, tc, err := g.starterClientWith(catalog)
	if err != nil {
		return err
	}
	defer tc.Close()
	var apiToken string
	if !df.noAPI {
		if apiToken, err = devAPIToken(g); err != nil {
			return err
		}
	}
	loc, _ := g.defaultLocation()
	printDevBanner(g, df, loc, kubeDesc, keyID)

	grp, gctx := errgroup.WithContext(ctx)
	if !df.noWorker {
		grp.Go(func() error { return runWorker(gctx, g, tc, kcfg, &df.worker, loc, log) })
	}
	if !df.noAPI {
		auth := httpapi.StaticToken(apiToken, df.api.anonymousPaths)
		grp.Go(func() error { return serveAPI(gctx, df.apiAddress, sc, log, auth, &df.api) })
		grp.Go(func() error { return serveWebhook(gctx, &df.api.controller.webhook, df.api.controller.namespace, log) })
		grp.Go(func() error {
			if df.sandbox && !df.api.controller.off {
				if err := ensureNamespace(gctx, kcfg, df.api.controller.namespace); err != nil {
					return err
				}
				if df.api.controller.webhook.address == "" {
					serve, err := serveDevWebhook(gctx, kcfg, df.api.controller.namespace, log)
					if err != nil {
						return err
					}
					df.api.controller.webhook.configuration = devWebhookConfiguration
					grp.Go(func() error { return serve(gctx) })
				}
			}
			return runController(gctx, &df.api.controller, kcfg, sc, log)
		})
	}
	grp.Go(func() error { <-gctx.Done(); return nil })
	err = grp.Wait()
	log.Info("Stopping cairn dev")
	if dm := df.worker.dataMover; dm.exposer == "process" {
		exposer.StopAll(dm.stateDirOr(g))
	}
	return err
}

// devCluster returns the cluster the dev worker backs up: a fresh sandbox,
// or the one of the kubeconfig.
func devCluster(ctx context.Context, g *globals, df *devFlags, log *zap.Logger) (*rest.Config, string, func(), error) {
	if df.noWorker && !df.sandbox {
		return nil, "none (no worker in this process)", func() {}, nil
	}
	if !df.sandbox {
		kcfg, err := kube.LoadConfig(g.kubeconfig)
		if err != nil {
			return nil, "", nil, err
		}
		return kcfg, kcfg.Host, func() {}, nil
	}
	binDir := df.kubeBinDir
	if binDir == "" {
		dir, err := sandbox.DefaultBinDir()
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w (build them with `make sandbox-bins`)", err)
		}
		binDir = dir
	}
	// The CSI stack (test driver, provisioner, snapshotter) comes along
	// when its binaries are there, so volume snapshots work out of the box.
	csi := sandbox.CheckCSIBinDir(binDir) == nil
	cluster, err := sandbox.Start(ctx, sandbox.Options{BinDir: binDir, DataDir: devSandboxDir(g), Log: log.Named("sandbox"),
		CSI: csi, Node: df.node})
	if err != nil {
		return nil, "", nil, err
	}
	desc := fmt.Sprintf("sandbox at %s\n                export KUBECONFIG=%s", cluster.Config().Host, cluster.KubeconfigPath())
	if df.node {
		desc += fmt.Sprintf("\n                node %s: pods on %s (images %s, %s)", sandbox.NodeName, sandbox.PodSubnet,
			sandbox.BusyboxImage, sandbox.PauseImage)
	}
	if csi {
		desc += fmt.Sprintf("\n                CSI volumes: StorageClass %s, VolumeSnapshotClass %s", sandbox.CSIStorageClass, sandbox.CSISnapshotClass)
		// Data movers are local processes reading the test driver's
		// directories: a data mover pod would need a cairn image on the
		// node, which `cairn dev` has no static build of.
		dm := &df.worker.dataMover
		dm.exposer, dm.csiStateDir = "process", cluster.CSIStateDir()
		if df.node {
			// File-system backups read the node's pods, on this machine.
			dm.podsDir = sandbox.KubeletPodsDir
		}
		if dm.repo.passwordFile == "" && os.Getenv(envRepositoryPassword) == "" {
			dm.repo.passwordFile = devPasswordPath(g)
			if err := ensureSecretFile(dm.repo.passwordFile); err != nil {
				return nil, "", nil, fmt.Errorf("repository password: %w", err)
			}
			desc += "\n                volume data encrypted with the password in " + dm.repo.passwordFile + " (keep it: without it nothing restores)"
		}
	}
	if len(df.worker.etcdEndpoints) == 0 {
		// etcd snapshots of the sandbox work out of the box.
		df.worker.etcdEndpoints = []string{cluster.EtcdEndpoint()}
	}
	return cluster.Config(), desc, func() { _ = cluster.Stop() }, nil
}

func printDevBanner(g *globals, df *devFlags, loc, kubeDesc, keyID string) {
	fmt.Printf("\ncairn dev is up\n")
	fmt.Printf("  Temporal:     %s (namespace %s, data in %s)\n", g.temporalAddress, g.temporalNamespace, filepath.Join(g.dataDir, "temporal.db"))
	if g.uiURL != "" && df.uiAddress != "" {
		fmt.Printf("  Temporal UI:  %s\n", g.uiURL)
	}
	if !df.noAPI {
		fmt.Printf("  Starter API:  http://%s\n", df.apiAddress)
		fmt.Printf("                token in %s: curl -H \"Authorization: Bearer $(cat %s)\" http://%s/v1/backups\n",
			devAPITokenPath(g), devAPITokenPath(g), df.apiAddress)
	}
	fmt.Printf("  Location:     %s\n", loc)
	fmt.Printf("                encrypted with key %s in %s (keep it: without it nothing restores)\n", keyID, g.keyFile())
	fmt.Printf("  Kubernetes:   %s\n", kubeDesc)
	if df.noWorker {
		fmt.Printf("  Worker:       none in this process; start `cairn worker`\n")
	}
	fmt.Printf("Press Ctrl-C to stop.\n\n")
}

// devEncryptionKey makes the data dir's key on the first start, as the
// repository password is, unless --encryption-key names one: what cairn
// dev writes is encrypted unless told otherwise.
func devEncryptionKey(g *globals) (string, error) {
	if g.encryptionKey == "" {
		if _, err := sealing.EnsureKeyFile(devKeyPath(g)); err != nil {
			return "", err
		}
	}
	opener, err := g.opener()
	if err != nil {
		return "", err
	}
	return opener.KeyID(), nil
}

func devAPITokenPath(g *globals) string { return filepath.Join(g.dataDir, "api-token") }

// devAPIToken is the bearer token of cairn dev's API, made on the first
// start and kept in the data dir, so scripts that read it keep working.
func devAPIToken(g *globals) (string, error) {
	path := devAPITokenPath(g)
	if err := ensureSecretFile(path); err != nil {
		return "", fmt.Errorf("API token: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("API token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("API token file %s is empty: remove it to get a new token", path)
	}
	return token, nil
}
