package cluster

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// authorizeBackup asks the cluster, as the identity the run acts as
// (asCaller sends every request as it), whether it may create backups
// where spec reads. A schedule's runs act as whoever last set it, so a
// right revoked since then stops the next run here instead of leaving
// it to read on.
func authorizeBackup(ctx context.Context, asCaller *rest.Config, spec v1alpha1.BackupSpec, who string) error {
	client, err := authzclient.NewForConfig(asCaller)
	if err != nil {
		return fmt.Errorf("authorization client: %w", err)
	}
	namespaces, clusterWide := spec.BackupAccess()
	if clusterWide {
		namespaces = append(namespaces, "")
	}
	for _, ns := range namespaces {
		review, err := client.SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: v1alpha1.APIGroup, Resource: v1alpha1.ResourceBackups},
		}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			msg := fmt.Sprintf("ask whether %s may create backups: %v", who, err)
			return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeForbidden, nil)
		}
		if err != nil {
			return fmt.Errorf("ask whether %s may create backups: %w", who, err)
		}
		if review.Status.Allowed {
			continue
		}
		where := "cluster-wide"
		if ns != "" {
			where = "in namespace " + ns
		}
		msg := fmt.Sprintf("%s may not create %s.%s %s", who, v1alpha1.ResourceBackups, v1alpha1.APIGroup, where)
		if review.Status.Reason != "" {
			msg += ": " + review.Status.Reason
		}
		return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeForbidden, nil)
	}
	return nil
}
