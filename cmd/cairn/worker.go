package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
	"github.com/cairn-backup/cairn/worker"
)

type workerFlags struct {
	pageInterval            time.Duration
	maxHookTimeout          time.Duration
	batchInterval           time.Duration
	tarballLimits           tarball.Limits
	maxConcurrentActivities int
	heartbeatTimeout        time.Duration
	configNamespace         string
	kubeQPS                 float32
	kubeBurst               int
	deleteInterval          time.Duration
	expireInterval          time.Duration
	maintenanceInterval     time.Duration
	metricsAddress          string
	healthAddress           string
	profilerAddress         string
	etcdEndpoints           []string
	etcdCA, etcdCert        string
	etcdKey                 string
	keepNewest              int
	keepNewestByDriver      map[string]int
	dataMover               dataMoverFlags
	extensionsFile          string
	extensions              []v1alpha1.Extension
}

func (w *workerFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&w.pageInterval, "page-interval", 0, "pause after every LIST page, to spare a busy API server")
	cmd.Flags().DurationVar(&w.maxHookTimeout, "max-hook-timeout", v1alpha1.DefaultMaxHookTimeout,
		"upper bound of every hook's timeout and of a restore hook's wait, whatever a pod annotation or a spec asks")
	cmd.Flags().DurationVar(&w.batchInterval, "batch-interval", 0, "pause after every restored batch of objects, to spare a busy API server")
	cmd.Flags().Int64Var(&w.tarballLimits.EntryBytes, "max-object-bytes", tarball.DefaultEntryBytes,
		"a restore refuses a backup holding a larger object file (CorruptBackup): it reads each whole")
	cmd.Flags().Int64Var(&w.tarballLimits.TotalBytes, "max-tarball-bytes", tarball.DefaultTotalBytes,
		"a restore refuses a backup whose tarball decompresses to more (CorruptBackup)")
	cmd.Flags().Float32Var(&w.kubeQPS, "kube-qps", 0, "requests per second to the API server (0: no client-side limit; concurrency is bounded per activity)")
	cmd.Flags().IntVar(&w.kubeBurst, "kube-burst", 0, "burst above --kube-qps (default: --kube-qps)")
	cmd.Flags().DurationVar(&w.deleteInterval, "delete-interval", 0, "pause after every object a backup deletion removes, to spare an object store that throttles deletes")
	cmd.Flags().DurationVar(&w.expireInterval, "expire-interval", time.Hour, "how often the Temporal Schedule "+
		"deletes the expired backups of --location (0: no schedule)")
	cmd.Flags().DurationVar(&w.maintenanceInterval, "maintenance-interval", time.Hour, "how often the Temporal Schedule "+
		"runs kopia maintenance on --location's volume data repository (0: no schedule)")
	cmd.Flags().StringVar(&w.metricsAddress, "metrics-address", "", "serve Prometheus metrics (runs by phase, durations, items, bytes) on this address, e.g. 127.0.0.1:9464 (empty: off)")
	cmd.Flags().StringVar(&w.profilerAddress, "profiler-address", "", "serve Go's pprof profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060, "+
		"to see where a slow worker spends its time (empty: off; keep it on loopback)")
	cmd.Flags().StringVar(&w.healthAddress, "health-address", "", "serve /healthz (the process runs) and /readyz (Temporal answers) on this address "+
		"for the kubelet's probes, e.g. 0.0.0.0:8081 (empty: off); with it the worker waits for an unreachable Temporal instead of exiting")
	cmd.Flags().StringSliceVar(&w.etcdEndpoints, "etcd-endpoints", nil, "etcd client URLs for etcd snapshots, tried in order (e.g. https://10.0.0.5:2379)")
	cmd.Flags().StringVar(&w.etcdCA, "etcd-ca", "", "CA bundle that signed etcd's serving certificate")
	cmd.Flags().StringVar(&w.etcdCert, "etcd-cert", "", "client certificate for etcd (e.g. /etc/kubernetes/pki/apiserver-etcd-client.crt)")
	cmd.Flags().StringVar(&w.etcdKey, "etcd-key", "", "client key for etcd")
	cmd.Flags().IntVar(&w.keepNewest, "snapshot-keep-newest", csi.DefaultKeepNewest,
		"native snapshots kept per volume by backups with nativeSnapshots: keep-newest (the oldest of a completed backup is deleted first)")
	cmd.Flags().StringToIntVar(&w.keepNewestByDriver, "snapshot-keep-newest-driver", nil,
		"per-CSI-driver override of --snapshot-keep-newest, e.g. ebs.csi.aws.com=7,pd.csi.storage.gke.io=2")
	cmd.Flags().IntVar(&w.maxConcurrentActivities, "max-concurrent-activities", 0, "activities this worker runs at once (0: SDK default)")
	cmd.Flags().DurationVar(&w.heartbeatTimeout, "heartbeat-timeout", v1alpha1.DefaultHeartbeatTimeout,
		"how long a silent step of a schedule, retention, deletion, etcd snapshot, verification or maintenance run is presumed alive "+
			"before Temporal retries it elsewhere (verification and maintenance get twice it); a backup or restore sets its own in its options")
	cmd.Flags().StringVar(&w.configNamespace, "config-namespace", "", "namespace of the Velero-format ConfigMaps restores read, such as "+
		"change-storage-class (default: --datamover-namespace; the chart sets the worker's own)")
	cmd.Flags().StringVar(&w.extensionsFile, "extensions", "", "the extensions backups call (a document of kind Extensions, docs/extensions.md); "+
		"read at start, and each backup keeps the set it was planned with")
	w.dataMover.register(cmd.Flags())
}

func newWorkerCommand(g *globals) *cobra.Command {
	wf := &workerFlags{}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a cairn worker against an existing Temporal cluster",
		Long: `Hosts cairn's workflows and cluster-side activities on the "cairn" task queue
of --temporal-address. Run as many as you like: Temporal spreads the work, and
a worker that dies mid-backup costs only the work since its last heartbeat.

Backups read and restores write the cluster of this worker; it comes from
--kubeconfig, $KUBECONFIG, ~/.kube/config or the in-cluster service account.
The worker also keeps a Temporal Schedule (cairn-expire-backups) that deletes
the expired backups of --location every --expire-interval.

Beside "cairn dev --sandbox --no-worker", a worker on the same --data-dir and
the sandbox's kubeconfig (<data-dir>/sandbox/kubeconfig) moves volume data as
cairn dev's own worker does: local data mover processes, the data dir's
repository password.`,
		Example: `  cairn worker --temporal-address temporal.example:7233 --temporal-namespace backups
  cairn worker --temporal-address my-ns.a1b2c.tmprl.cloud:7233 --temporal-namespace my-ns.a1b2c --api-key $KEY
  cairn worker --data-dir .cairn --kubeconfig .cairn/sandbox/kubeconfig   # beside cairn dev --sandbox --no-worker`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := wf.validate(); err != nil {
				return err
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			kcfg, err := kube.LoadConfig(g.kubeconfig)
			if err != nil {
				return err
			}
			tc, err := wf.connect(cmd.Context(), g, log)
			if err != nil {
				return err
			}
			defer tc.Close()
			if err := worker.RegisterSearchAttributes(cmd.Context(), tc, g.temporalNamespace); err != nil {
				// Temporal Cloud and locked-down clusters manage attributes
				// themselves; the worker still runs if they exist.
				log.Warn("Could not register cairn's search attributes; create them with `temporal operator search-attribute create` if runs fail to start", zap.Error(err))
			}
			loc, err := g.defaultLocation()
			if err != nil {
				return err
			}
			if wf.metricsAddress != "" {
				if err := serveMetrics(cmd.Context(), wf.metricsAddress, log); err != nil {
					return err
				}
			}
			if wf.profilerAddress != "" {
				if err := serveProfiler(cmd.Context(), wf.profilerAddress, log); err != nil {
					return err
				}
			}
			wf.dataMover.devSandboxDefaults(cmd.Flags(), g)
			return runWorker(cmd.Context(), g, tc, kcfg, wf, loc, log)
		},
	}
	wf.register(cmd)
	return cmd
}

// validate refuses flags no run could work with, before anything starts.
func (w *workerFlags) validate() error {
	if w.heartbeatTimeout < v1alpha1.MinHeartbeatTimeout || w.heartbeatTimeout > v1alpha1.MaxHeartbeatTimeout {
		return &usageError{fmt.Errorf("--heartbeat-timeout %s: must be between %s and %s",
			w.heartbeatTimeout, v1alpha1.MinHeartbeatTimeout, v1alpha1.MaxHeartbeatTimeout)}
	}
	exts, err := readExtensions(w.extensionsFile)
	w.extensions = exts
	return err
}

// connect dials Temporal. With --health-address it first serves the
// probes, and keeps trying an unreachable Temporal, unready meanwhile.
func (w *workerFlags) connect(ctx context.Context, g *globals, log *zap.Logger) (client.Client, error) {
	if w.healthAddress == "" {
		return g.dial(log)
	}
	h := newHealth(g.temporalAddress)
	if err := h.serve(ctx, w.healthAddress, log); err != nil {
		return nil, err
	}
	return g.dialRetrying(ctx, h, log)
}

func runWorker(ctx context.Context, g *globals, tc client.Client, kcfg *rest.Config, wf *workerFlags, loc string, log *zap.Logger) error {
	etcdTLS, err := wf.etcdTLS()
	if err != nil {
		return err
	}
	movement, err := wf.dataMover.config(ctx, g, kcfg, log)
	if err != nil {
		return err
	}
	catalog, err := g.catalog(false)
	if err != nil {
		return err
	}
	opener, err := g.opener()
	if err != nil {
		return err
	}
	movement.Repository.Locations = opener
	var others []location.Entry
	for _, e := range catalog.Entries() {
		if e.Name != catalog.Default {
			others = append(others, e)
		}
	}
	return worker.Run(ctx, tc, worker.Config{
		Etcd:                etcd.Config{Endpoints: wf.etcdEndpoints, TLS: etcdTLS},
		Kube:                kcfg,
		Log:                 log,
		Options:             worker.Options{MaxConcurrentActivities: wf.maxConcurrentActivities, HeartbeatTimeout: wf.heartbeatTimeout},
		ConfigNamespace:     wf.configNamespace,
		PageInterval:        wf.pageInterval,
		MaxHookTimeout:      wf.maxHookTimeout,
		BatchInterval:       wf.batchInterval,
		TarballLimits:       wf.tarballLimits,
		KubeQPS:             wf.kubeQPS,
		KubeBurst:           wf.kubeBurst,
		DeleteInterval:      wf.deleteInterval,
		Location:            loc,
		OtherLocations:      others,
		Locations:           opener,
		ExpireInterval:      wf.expireInterval,
		MaintenanceInterval: wf.maintenanceInterval,
		SnapshotRetention:   csi.Retention{KeepNewest: wf.keepNewest, ByDriver: wf.keepNewestByDriver},
		DataMovement:        movement,
		Extensions:          wf.extensions,
	})
}

// etcdTLS is the TLS configuration of --etcd-ca/--etcd-cert/--etcd-key;
// nil when none is given (plain HTTP endpoints).
func (w *workerFlags) etcdTLS() (*tls.Config, error) {
	if w.etcdCA == "" && w.etcdCert == "" && w.etcdKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if w.etcdCA != "" {
		pem, err := os.ReadFile(w.etcdCA)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--etcd-ca: %w", err)}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &usageError{fmt.Errorf("--etcd-ca %s holds no PEM certificate", w.etcdCA)}
		}
	}
	if (w.etcdCert == "") != (w.etcdKey == "") {
		return nil, &usageError{fmt.Errorf("--etcd-cert and --etcd-key go together")}
	}
	if w.etcdCert != "" {
		pair, err := tls.LoadX509KeyPair(w.etcdCert, w.etcdKey)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--etcd-cert/--etcd-key: %w", err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
