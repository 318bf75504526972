package cluster

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// EachSelectedPod calls fn with each pod the backup's filters select,
// listed page by page with kc. When kc impersonates the run's caller
// (asCaller), a namespace whose pods the caller may not list is passed
// over: none of them is backed up either.
func (p StoredPlan) EachSelectedPod(ctx context.Context, kc kubernetes.Interface, asCaller bool, fn func(*corev1.Pod) error) error {
	labels, globs, namespaces, err := p.Selection()
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		pages := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kc.CoreV1().Pods(ns).List(ctx, opts)
		})
		err := pages.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			activity.RecordHeartbeat(ctx)
			pod := obj.(*corev1.Pod)
			if !globs.Match(pod.Namespace) || !labels.Match(pod.Labels) {
				return nil
			}
			return fn(pod)
		})
		var appErr *temporal.ApplicationError
		switch {
		case errors.As(err, &appErr):
			return err // fn's, as it is: Temporal reads its type
		case asCaller && apierrors.IsForbidden(err):
			continue
		case err != nil:
			return fmt.Errorf("list pods: %w", err)
		}
	}
	return nil
}
