package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/workflows"
)

// Config is what a worker process needs besides its Temporal client.
type Config struct {
	Kube *rest.Config
	Log  *zap.Logger
	Options
	// PageInterval pauses after every LIST page (see cluster.Activities).
	PageInterval time.Duration
	// BatchInterval pauses after every restored batch (see restore.Activities).
	BatchInterval time.Duration
	// KubeQPS and KubeBurst limit requests to the API server on the client
	// side; 0 sets no limit: requests in flight are already bounded by each
	// activity's concurrency, and the API server's priority and fairness
	// protects it from more.
	KubeQPS   float32
	KubeBurst int
	// DeleteInterval pauses after every deleted object (see store.Activities).
	DeleteInterval time.Duration
	// Location is the backup location whose expired backups the expiry
	// schedule deletes, every ExpireInterval (0: no schedule).
	Location       string
	ExpireInterval time.Duration
	// Etcd is how etcd snapshots reach etcd; without endpoints they fail
	// with a clear error.
	Etcd etcd.Config
	// SnapshotRetention is how many native snapshots per volume backups in
	// keep-newest mode keep.
	SnapshotRetention csi.Retention
}

// Run hosts cairn's workflows and cluster activities until ctx ends, then
// stops the worker gracefully: running activities get the SDK's stop
// timeout, and anything cut short is retried from its last heartbeat by
// whichever worker polls next.
func Run(ctx context.Context, c client.Client, cfg Config) error {
	kcfg := rest.CopyConfig(cfg.Kube)
	kcfg.QPS, kcfg.Burst = -1, 0 // client-go: a negative QPS disables its rate limiter
	if cfg.KubeQPS > 0 {
		kcfg.QPS, kcfg.Burst = cfg.KubeQPS, max(cfg.KubeBurst, int(cfg.KubeQPS))
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
	restoreActs := &restore.Activities{Clients: clients, Log: cfg.Log, BatchInterval: cfg.BatchInterval}
	storeActs := &store.Activities{Log: cfg.Log, DeleteInterval: cfg.DeleteInterval}
	etcdActs := &etcd.Activities{Etcd: cfg.Etcd, Log: cfg.Log}
	csiActs, err := csi.New(clients, cfg.Log, cfg.SnapshotRetention)
	if err != nil {
		return err
	}
	w := New(c, Activities{Cluster: clusterActs, Store: storeActs, Restore: restoreActs, Etcd: etcdActs, CSI: csiActs}, cfg.Options)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if cfg.ExpireInterval > 0 && cfg.Location != "" {
		if err := EnsureExpirySchedule(ctx, c, cfg.Location, cfg.ExpireInterval); err != nil {
			cfg.Log.Warn("Could not set up the schedule that deletes expired backups", zap.Error(err))
		}
	}
	cfg.Log.Info("Worker polling", zap.String("taskQueue", workflows.TaskQueue), zap.String("kubernetes", cfg.Kube.Host))
	<-ctx.Done()
	w.Stop()
	return nil
}
