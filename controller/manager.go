package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/webhook"
)

// Options configure the controller.
type Options struct {
	// Namespace is cairn's own: resources there act as the worker, and
	// the leader election lease lives there.
	Namespace string
	// LeaderElection lets one of several API replicas run the controller.
	LeaderElection bool
	// WebhookConfiguration names the MutatingWebhookConfiguration that
	// puts cairn's admission webhook in front of its resources. Without
	// it, resources outside Namespace are refused.
	WebhookConfiguration string
	// WebhookPropagation is how long after that configuration is created
	// a resource's recorded creator is trusted (webhook.Propagation when
	// zero): a resource created sooner may have met no webhook.
	WebhookPropagation time.Duration
	// MirrorInterval is how often backups started elsewhere, or found in
	// a location, are made visible as Backup resources (a minute when
	// zero).
	MirrorInterval time.Duration
	Log            *zap.Logger
}

// ErrTypesNotServed is Run's answer for a cluster without cairn's CRDs.
var ErrTypesNotServed = errors.New("the cluster does not serve cairn.io/v1alpha1 (install the chart's CRDs)")

// Run turns Backup and Restore resources into runs of r, and keeps
// Schedule resources in step with Temporal Schedules, until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, r runs, opts Options) error {
	if err := typesServed(cfg); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		return err
	}
	logger := zapr.NewLogger(opts.Log.Named("controller-runtime"))
	ctrl.SetLogger(logger) // the first logger set wins: a program's own
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  logger,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "cairn-controller",
		LeaderElectionNamespace: opts.Namespace,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		// Run may run again in the same process once an earlier Run ended
		// (a test restarts the controller); names stay unique meanwhile.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if opts.WebhookPropagation == 0 {
		opts.WebhookPropagation = webhook.Propagation
	}
	t := tenancy{namespace: opts.Namespace, webhookConfiguration: opts.WebhookConfiguration,
		propagation: opts.WebhookPropagation, reader: mgr.GetAPIReader()}
	// Each kind has its own waiter: a closed run enqueues its resource by
	// name, in the queue of its own kind.
	backupRuns, restoreRuns := newRunWaiter(ctx, r.WaitRun, opts.Log), newRunWaiter(ctx, r.WaitRun, opts.Log)
	follower := func(w *runWaiter) runFollower {
		return runFollower{kube: mgr.GetClient(), waiter: w, tenancy: t, log: opts.Log, now: time.Now}
	}
	backups := &backupReconciler{runFollower: follower(backupRuns), runs: r}
	restores := &restoreReconciler{runFollower: follower(restoreRuns), runs: r}
	if err := ctrl.NewControllerManagedBy(mgr).Named("backup").
		For(&v1alpha1.Backup{}).
		WatchesRawSource(source.Channel(backupRuns.events, &handler.EnqueueRequestForObject{})).
		Complete(backups); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Restore{}, restoreBackupIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Restore).Spec.BackupName}
	}); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("restore").
		For(&v1alpha1.Restore{}).
		Watches(&v1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(restoresOf(mgr.GetClient()))).
		WatchesRawSource(source.Channel(restoreRuns.events, &handler.EnqueueRequestForObject{})).
		Complete(restores); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	schedules := &scheduleReconciler{kube: mgr.GetClient(), runs: r, tenancy: t, log: opts.Log, now: time.Now}
	if err := ctrl.NewControllerManagedBy(mgr).Named("schedule").
		For(&v1alpha1.Schedule{}).
		Complete(schedules); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if opts.MirrorInterval == 0 {
		opts.MirrorInterval = time.Minute
	}
	if err := mgr.Add(&backupMirror{kube: mgr.GetClient(), runs: r, tenancy: t, interval: opts.MirrorInterval,
		log: opts.Log.Named("mirror")}); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	opts.Log.Info("Controller starting", zap.String("namespace", opts.Namespace), zap.Bool("leaderElection", opts.LeaderElection),
		zap.String("webhookConfiguration", opts.WebhookConfiguration))
	return mgr.Start(ctx)
}

// typesServed checks discovery for cairn's resources, so a cluster
// without the CRDs gets a clear error instead of informers that never sync.
func typesServed(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String()); err != nil {
		if apierrors.IsNotFound(err) {
			return ErrTypesNotServed
		}
		return fmt.Errorf("controller: discovery of %s: %w", v1alpha1.GroupVersion, err)
	}
	return nil
}
