package devserver

import (
	"fmt"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
)

// launchTemporal builds and starts the all-in-one Temporal server, logging
// to base through a serverLog.
func launchTemporal(base *zap.Logger, l layout, sql *config.SQL) (temporal.Server, *serverLog, error) {
	sl := &serverLog{}
	sl.starting.Store(true)
	defer sl.starting.Store(false)
	srv, err := newTemporal(sl.logger(base), l, sql)
	if err != nil {
		return nil, nil, err
	}
	if err := startTemporal(srv); err != nil {
		sl.muted.Store(true)
		_ = srv.Stop()
		return nil, nil, err
	}
	return srv, sl, nil
}

// newTemporal builds (without starting) the all-in-one Temporal server,
// logging to log.
//
// The server logs at fatal level when it cannot set up, for example when a
// port is taken; serverLog turns that into a panic, which newTemporal and
// startTemporal return as an error.
func newTemporal(log *zap.Logger, l layout, sql *config.SQL) (srv temporal.Server, err error) {
	defer recoverFatal(&err, "create")
	cfg := serverConfig(l, sql)
	logger := tlog.NewZapLogger(log)
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("temporal claim mapper: %w", err)
	}
	srv, err = temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(staticHosts(l)),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	return srv, nil
}

// startTemporal starts the services; see newTemporal about panics.
func startTemporal(srv temporal.Server) (err error) {
	defer recoverFatal(&err, "start")
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start temporal server: %w", err)
	}
	return nil
}

// recoverFatal turns a panic from the server's fatal log into *err.
func recoverFatal(err *error, op string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s temporal server: %v", op, r)
	}
}
