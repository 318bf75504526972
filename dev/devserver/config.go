package devserver

import (
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
)

const (
	// clusterName names the single local cluster. It is stored in the
	// database on first start, so it must not change.
	clusterName = "active"
	// storeName names the one SQLite data store (history and visibility).
	storeName = "sqlite-default"
	// historyShards is fixed in the database on first start.
	historyShards = 1
)

// layout is where each service listens.
type layout struct {
	frontend hostPort
	history  hostPort
	matching hostPort
	worker   hostPort
}

// pickLayout places the frontend on the requested address and every
// internal service on a free loopback port.
func pickLayout(p *portPicker, frontend hostPort) (layout, error) {
	l := layout{frontend: frontend}
	for _, hp := range []*hostPort{&l.history, &l.matching, &l.worker} {
		port, err := p.pick(loopback)
		if err != nil {
			return layout{}, err
		}
		*hp = hostPort{IP: loopback, Port: port}
	}
	return l, nil
}

// sqlConfig is the SQLite data store in the file at path.
func sqlConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		// rwc: read-write, create if missing. The plugin keeps one
		// connection per file, which serialises access; fine for one
		// developer machine. A write-ahead log synced at checkpoints
		// (journal_mode=wal, synchronous=normal) instead of a rollback
		// journal synced at every commit: a transaction costs one write
		// instead of several syncs, and what was committed survives the
		// process being killed (only a power cut may lose the last ones).
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}
}

// serverConfig is the static configuration of an all-in-one server: the
// four services in this process, SQLite for history and visibility, no
// metrics, pprof or archival listeners, and no frontend HTTP API.
func serverConfig(l layout, sql *config.SQL) *config.Config {
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{
		MaxJoinDuration:  30 * time.Second,
		BroadcastAddress: loopback,
	}
	cfg.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  storeName,
		NumHistoryShards: historyShards,
		DataStores:       map[string]config.DataStore{storeName: {SQL: sql}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             l.frontend.dialAddr(),
			},
		},
	}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = map[string]config.Service{
		string(primitives.FrontendService): serviceConfig(l.frontend),
		string(primitives.HistoryService):  serviceConfig(l.history),
		string(primitives.MatchingService): serviceConfig(l.matching),
		string(primitives.WorkerService):   serviceConfig(l.worker),
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The server's own system workers dial the frontend through this.
	cfg.PublicClient.HostPort = l.frontend.dialAddr()
	return cfg
}

// serviceConfig binds one service's gRPC port to hp. No membership port is
// set: with static hosts the ringpop membership listener is not started.
func serviceConfig(hp hostPort) config.Service {
	return config.Service{RPC: config.RPC{GRPCPort: hp.Port, BindOnIP: hp.IP}}
}

// staticHosts tells each service where the others are, replacing ringpop
// membership (no gossip, no join delay, no membership listeners).
func staticHosts(l layout) map[primitives.ServiceName]static.Hosts {
	self := func(hp hostPort) static.Hosts { return static.SingleLocalHost(hp.dialAddr()) }
	return map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: self(l.frontend),
		primitives.HistoryService:  self(l.history),
		primitives.MatchingService: self(l.matching),
		primitives.WorkerService:   self(l.worker),
	}
}

// dynamicConfig holds the dev-server values that differ from the
// defaults.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Search attributes registered at start are usable at once, not
		// after the cache's refresh interval.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// One partition per task queue: with a single matching host more
		// partitions only add forwarding hops and delay.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The one history shard takes every workflow's tasks, and by
		// default a shard's queues read new tasks from the database at
		// most 20 times a second. Once that burst is spent, every
		// workflow and activity task waited up to 50 ms to be read: a
		// backup of 100 objects took 0.21 s from its tenth run on, against
		// 0.11 s before. A cluster of many shards spreads that load; here
		// the shard reads as often as tasks come (a read takes whatever
		// is new, so the rate follows the work, not the limit).
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   1000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      1000,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): 1000,
	}
}
