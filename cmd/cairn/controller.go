package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/controller"
	"github.com/cairn-backup/cairn/starter"
)

// controllerFlags say whether and where the starter API runs the
// controller of Backup and Restore resources.
type controllerFlags struct {
	off bool
	// namespace is the global --controller-namespace.
	namespace   string
	leaderElect bool
	webhook     webhookFlags
}

func (c *controllerFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&c.off, "no-controller", false, "do not turn Backup and Restore resources (cairn.io/v1alpha1) into runs")
	fl.BoolVar(&c.leaderElect, "leader-elect", false, "run the controller in one replica at a time (a Lease in --controller-namespace)")
	c.webhook.register(fl)
}

func defaultControllerNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "cairn"
}

// runController runs the controller until ctx ends; a cluster that does
// not serve cairn's CRDs only gets a warning, so the API still serves.
func runController(ctx context.Context, c *controllerFlags, cfg *rest.Config, sc *starter.Client, log *zap.Logger) error {
	if c.off || cfg == nil {
		return nil
	}
	err := controller.Run(ctx, cfg, sc, controller.Options{Namespace: c.namespace, LeaderElection: c.leaderElect,
		WebhookConfiguration: c.webhook.configuration, Log: log.Named("controller")})
	if errors.Is(err, controller.ErrTypesNotServed) {
		log.Warn("Controller off", zap.Error(err))
		return nil
	}
	return err
}
