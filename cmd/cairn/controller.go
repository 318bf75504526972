package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

// ensureNamespace creates the controller's namespace in a sandbox, so the
// first Backup resource made there has somewhere to go.
func ensureNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	return nil
}
