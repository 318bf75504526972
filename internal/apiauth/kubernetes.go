// Package apiauth authenticates and authorizes the starter API's callers:
// with the cluster's TokenReview and SubjectAccessReview, as the
// Kubernetes API server's own webhooks do, or with the one token that
// `cairn dev` generates.
package apiauth

import (
	"context"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/starter"
)

// Kubernetes authenticates bearer tokens with TokenReview (service-account
// tokens from `kubectl create token`, OIDC tokens: whatever the cluster
// accepts) and authorizes with SubjectAccessReview on cairn's resources
// in API group cairn.io; every run a caller starts acts as that caller.
// The identity kc uses needs create on tokenreviews and
// subjectaccessreviews (ClusterRole system:auth-delegator).
func Kubernetes(kc kubernetes.Interface, anonymousPaths []string) starter.Auth {
	return starter.Auth{
		Authenticate: func(ctx context.Context, token string) (*starter.User, error) { return reviewToken(ctx, kc, token) },
		Authorize: func(ctx context.Context, u *starter.User, a starter.Access) (bool, string, error) {
			return reviewAccess(ctx, kc, u, a)
		},
		AnonymousPaths: anonymousPaths,
		ActAsCaller:    true,
	}
}

func reviewToken(ctx context.Context, kc kubernetes.Interface, token string) (*starter.User, error) {
	review, err := kc.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	if !review.Status.Authenticated {
		msg := "the cluster did not accept the bearer token"
		if review.Status.Error != "" {
			msg += ": " + review.Status.Error
		}
		return nil, &starter.UnauthenticatedError{Message: msg}
	}
	u := review.Status.User
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return &starter.User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}, nil
}

func reviewAccess(ctx context.Context, kc kubernetes.Interface, u *starter.User, a starter.Access) (bool, string, error) {
	spec := authzv1.SubjectAccessReviewSpec{User: u.Name, UID: u.UID, Groups: u.Groups, Extra: make(map[string]authzv1.ExtraValue, len(u.Extra))}
	for k, v := range u.Extra {
		spec.Extra[k] = v
	}
	if a.Path != "" {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	} else {
		spec.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb, Group: starter.APIGroup,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	}
	review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	return review.Status.Allowed && !review.Status.Denied, review.Status.Reason, nil
}
