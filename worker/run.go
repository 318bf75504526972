package worker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// Config is what a worker process needs besides its Temporal client.
type Config struct {
	Kube *rest.Config
	Log  *zap.Logger
	Options
	// ConfigNamespace holds the Velero-format ConfigMaps restores read
	// (empty: the data movers' namespace).
	ConfigNamespace string
	// PageInterval pauses after every LIST page (see cluster.Activities).
	PageInterval time.Duration
	// BatchInterval pauses after every restored batch (see restore.Activities).
	BatchInterval time.Duration
	// MaxHookTimeout bounds every hook's timeout (0: the default).
	MaxHookTimeout time.Duration
	// TarballLimits bound what a restore reads of a backup's tarball.
	TarballLimits tarball.Limits
	// KubeQPS and KubeBurst limit requests to the API server on the client
	// side; 0 sets no limit: requests in flight are already bounded by each
	// activity's concurrency, and the API server's priority and fairness
	// protects it from more.
	KubeQPS   float32
	KubeBurst int
	// DeleteInterval pauses after every deleted object (see store.Activities).
	DeleteInterval time.Duration
	// Location is the default backup location. It and each of
	// OtherLocations that is not read-only get an expiry schedule, which
	// deletes their expired backups every ExpireInterval (0: no schedule).
	Location       string
	OtherLocations []location.Entry
	// Locations opens locations with the process's encryption key.
	Locations      *location.Opener
	ExpireInterval time.Duration
	// MaintenanceInterval is how often kopia maintenance of each such
	// location's repository is looked at (0: no schedule); kopia decides
	// whether a quick or full cycle is due.
	MaintenanceInterval time.Duration
	// Etcd is how etcd snapshots reach etcd; without endpoints they fail
	// with a clear error.
	Etcd etcd.Config
	// SnapshotRetention is how many native snapshots per volume backups in
	// keep-newest mode keep.
	SnapshotRetention csi.Retention
	// DataMovement says how volumes are exposed to data movers.
	DataMovement DataMovement
	// Extensions are the registered extensions backups call.
	Extensions []v1alpha1.Extension
}

// DataMovement configures the exposer of volume data movers.
type DataMovement struct {
	// Exposer is "pod" (the default: a pod per data mover) or "process"
	// (the sandbox: a local process reading the test CSI driver's files).
	Exposer string
	// Namespace holds the data movers' claims, snapshot clones and pods.
	Namespace string
	Pod       exposer.PodConfig
	// Process exposer settings: the data mover command, its extra
	// environment, where it keeps records and logs, and the sandbox CSI
	// driver's state directory.
	Command     []string
	Env         []string
	StateDir    string
	CSIStateDir string
	// Concurrency bounds the data movers per node.
	Concurrency expose.Concurrency
	// PodsDir is the kubelet's pods directory on the nodes (empty:
	// expose.DefaultPodsDir).
	PodsDir string
	// Repository opens the locations' kopia repositories on the worker
	// (to delete a backup's volume data).
	Repository kopiarepo.Config
}

// exposer builds the configured exposer over the CSI activities' clients.
func (d DataMovement) exposer(acts *csi.Activities) (exposer.Exposer, error) {
	vols := &exposer.Volumes{Kube: acts.Kube, Snapshots: acts.Snapshots}
	switch d.Exposer {
	case "", "pod":
		return &exposer.Pod{Volumes: vols, Config: d.Pod}, nil
	case "process":
		return &exposer.Process{Volumes: vols, CSIStateDir: d.CSIStateDir, StateDir: d.StateDir, Command: d.Command, Env: d.Env}, nil
	default:
		return nil, fmt.Errorf("unknown data mover exposer %q (use pod or process)", d.Exposer)
	}
}

// DefaultDataMoverNamespace holds data movers when none is configured.
const DefaultDataMoverNamespace = "cairn"

// Run hosts cairn's workflows and cluster activities until ctx ends, then
// stops the worker gracefully: running activities get the SDK's stop
// timeout, and anything cut short is retried from its last heartbeat by
// whichever worker polls next.
func Run(ctx context.Context, c client.Client, cfg Config) error {
	if err := checkLocks(ctx, cfg); err != nil {
		return err
	}
	kcfg := rest.CopyConfig(cfg.Kube)
	kcfg.QPS, kcfg.Burst = -1, 0 // client-go: a negative QPS disables its rate limiter
	if cfg.KubeQPS > 0 {
		kcfg.QPS, kcfg.Burst = cfg.KubeQPS, max(cfg.KubeBurst, int(cfg.KubeQPS))
		// One limiter for every client made from this config, those that
		// impersonate a run's caller included (rest.CopyConfig shares it).
		kcfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(kcfg.QPS, kcfg.Burst)
	}
	clients, err := kube.NewClients(kcfg)
	if err != nil {
		return err
	}
	clusterActs, err := cluster.New(clients, cfg.Log)
	if err != nil {
		return err
	}
	clusterActs.PageInterval = cfg.PageInterval
	caller := &extcall.TemporalCaller{Client: c}
	clusterActs.Registered, clusterActs.Extensions = cfg.Extensions, caller
	clusterActs.Operations = extcall.TemporalOperator{Client: c}
	ns := cfg.DataMovement.Namespace
	if ns == "" {
		ns = DefaultDataMoverNamespace
	}
	configNamespace := cmp.Or(cfg.ConfigNamespace, ns)
	restoreActs := &restore.Activities{Clients: clients, Log: cfg.Log, BatchInterval: cfg.BatchInterval, TarballLimits: cfg.TarballLimits,
		ConfigNamespace: configNamespace, Registered: cfg.Extensions, Extensions: caller,
		Operations:  extcall.TemporalOperator{Client: c},
		RestoreWait: restore.RestoreWait{Image: cfg.DataMovement.Pod.Image, PullPolicy: cfg.DataMovement.Pod.ImagePullPolicy}}
	storeActs := &store.Activities{Log: cfg.Log, DeleteInterval: cfg.DeleteInterval, Registered: cfg.Extensions,
		Extensions: caller}
	etcdActs := &etcd.Activities{Etcd: cfg.Etcd, Log: cfg.Log}
	csiActs, err := csi.New(clients, cfg.Log, cfg.SnapshotRetention)
	if err != nil {
		return err
	}
	csiActs.ConfigNamespace = configNamespace
	hookActs, err := hooks.New(clients, cfg.Log)
	if err != nil {
		return err
	}
	hookActs.MaxTimeout = cfg.MaxHookTimeout
	exp, err := cfg.DataMovement.exposer(csiActs)
	if err != nil {
		return err
	}
	exposeActs := &expose.Activities{Exposer: exp, Namespace: ns, Log: cfg.Log, Concurrency: cfg.DataMovement.Concurrency, Temporal: c,
		PodsDir: cfg.DataMovement.PodsDir}
	repoActs := &repository.Activities{Repository: cfg.DataMovement.Repository, Log: cfg.Log}
	for _, l := range []**location.Opener{&clusterActs.Locations, &restoreActs.Locations, &storeActs.Locations, &etcdActs.Locations,
		&csiActs.Locations, &hookActs.Locations, &exposeActs.Locations, &repoActs.Locations} {
		*l = cfg.Locations
	}
	w := New(c, Activities{Cluster: clusterActs, Store: storeActs, Restore: restoreActs, Etcd: etcdActs, CSI: csiActs,
		Hooks: hookActs, Expose: exposeActs, Repo: repoActs}, cfg.Options)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	ensureLocationSchedules(ctx, c, cfg)
	names := make([]string, 0, len(cfg.Extensions))
	for _, e := range cfg.Extensions {
		names = append(names, e.Name+"@"+e.TaskQueue)
	}
	cfg.Log.Info("Worker polling", zap.String("taskQueue", v1alpha1.TaskQueue), zap.String("kubernetes", cfg.Kube.Host), zap.Strings("extensions", names))
	<-ctx.Done()
	w.Stop()
	return nil
}

// checkLocks refuses to start with an immutable location whose bucket
// cannot lock: backups written there would be deletable, against what
// the operator declared.
func checkLocks(ctx context.Context, cfg Config) error {
	for _, e := range cfg.locations() {
		if cfg.Locations.Lock(e.URL) == nil {
			continue
		}
		loc, err := cfg.Locations.Open(ctx, e.URL)
		if err != nil {
			return fmt.Errorf("location %s: %w", e.Name, err)
		}
		err = loc.CheckLock(ctx)
		loc.Close()
		if err != nil {
			return fmt.Errorf("location %s: %w", e.Name, err)
		}
		cfg.Log.Info("Immutable location", zap.String("location", e.Name), zap.Stringer("lock", loc.Lock()))
	}
	return nil
}

// locations are the default location, when there is one, and the others.
func (c Config) locations() []location.Entry {
	var out []location.Entry
	if c.Location != "" {
		out = append(out, location.Entry{Name: location.DefaultName, URL: c.Location})
	}
	return append(out, c.OtherLocations...)
}
