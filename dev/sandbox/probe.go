package sandbox

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// readyTimeout bounds the wait for the controller-manager to work.
	readyTimeout = 90 * time.Second
	pollInterval = 100 * time.Millisecond
	// probeNamespace exists as soon as envtest's Start returns.
	probeNamespace = "default"
)

// waitWorking proves kube-controller-manager works end to end: it creates a
// ConfigMap owned by another, deletes the owner, and waits for the garbage
// collector to delete the dependent. That needs the controller-manager's
// credentials, discovery and synced informers, as namespace deletion does,
// but takes well under a second where namespace deletion always takes more
// than 5 s (the namespace controller waits 5 s before acting on a deletion).
func waitWorking(ctx context.Context, cs kubernetes.Interface, cm *process, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	start := time.Now()
	cms := cs.CoreV1().ConfigMaps(probeNamespace)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cairn-sandbox-probe-"},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: create probe owner: %w", err)
	}
	dependent, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: owner.Name + "-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: create probe dependent: %w", err)
	}
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("sandbox: delete probe owner %s: %w", owner.Name, err)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		_, err := cms.Get(ctx, dependent.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			log.Info("kube-controller-manager works: probe garbage collected",
				zap.String("configMap", probeNamespace+"/"+dependent.Name), zap.Duration("took", time.Since(start)))
			return nil
		case err != nil && ctx.Err() == nil:
			log.Debug("probe get failed, retrying", zap.Error(err))
		}
		if err := cm.exited(); err != nil {
			return fmt.Errorf("sandbox: waiting for garbage collection of %s/%s: %w", probeNamespace, dependent.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: %s/%s not garbage collected by kube-controller-manager after %s (see %s): %w",
				probeNamespace, dependent.Name, time.Since(start).Round(time.Millisecond), cm.logPath(), ctx.Err())
		case <-tick.C:
		}
	}
}
