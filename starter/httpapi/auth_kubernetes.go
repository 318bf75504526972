package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// reviewTTL is how long the cluster's answer about a token or an access
// is reused: revoked rights take effect within it.
const reviewTTL = 5 * time.Second

// maxCachedReviews bounds the answers kept.
const maxCachedReviews = 10000

// Kubernetes authenticates bearer tokens with TokenReview (service-account
// tokens from `kubectl create token`, OIDC tokens: whatever the cluster
// accepts) and authorizes with SubjectAccessReview on cairn's resources
// in API group cairn.io; every run a caller starts acts as that caller.
// With audiences, a token must be meant for one of them (TokenReview's
// audiences), so a token minted for another service is refused. Answers
// are reused for a few seconds. The identity kc uses needs create on
// tokenreviews and subjectaccessreviews (ClusterRole system:auth-delegator).
func KubernetesAuth(kc kubernetes.Interface, anonymousPaths []string, audiences ...string) Auth {
	users := newReviewCache[*User](reviewTTL, maxCachedReviews)
	decisions := newReviewCache[accessDecision](reviewTTL, maxCachedReviews)
	return Auth{
		Authenticate: func(ctx context.Context, token string) (*User, error) {
			if u, ok := users.get(token); ok {
				return u, nil
			}
			u, err := reviewToken(ctx, kc, token, audiences)
			if err == nil {
				users.put(token, u)
			}
			return u, err
		},
		Authorize: func(ctx context.Context, u *User, a Access) (bool, string, error) {
			key := accessKey(u, a)
			if d, ok := decisions.get(key); ok {
				return d.allowed, d.reason, nil
			}
			allowed, reason, err := reviewAccess(ctx, kc, u, a)
			if err == nil {
				decisions.put(key, accessDecision{allowed: allowed, reason: reason})
			}
			return allowed, reason, err
		},
		AnonymousPaths: anonymousPaths,
		ActAsCaller:    true,
	}
}

type accessDecision struct {
	allowed bool
	reason  string
}

// accessKey names a user and an access unambiguously.
func accessKey(u *User, a Access) string {
	data, _ := json.Marshal(struct {
		User   *User
		Access Access
	}{u, a})
	return string(data)
}

func reviewToken(ctx context.Context, kc kubernetes.Interface, token string, audiences []string) (*User, error) {
	review, err := kc.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
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
	if len(audiences) > 0 && !slices.ContainsFunc(review.Status.Audiences, func(a string) bool { return slices.Contains(audiences, a) }) {
		return nil, &starter.UnauthenticatedError{Message: fmt.Sprintf("the bearer token is not meant for this API (audiences %v)", audiences)}
	}
	u := review.Status.User
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return &User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}, nil
}

func reviewAccess(ctx context.Context, kc kubernetes.Interface, u *User, a Access) (bool, string, error) {
	spec := authzv1.SubjectAccessReviewSpec{User: u.Name, UID: u.UID, Groups: u.Groups, Extra: make(map[string]authzv1.ExtraValue, len(u.Extra))}
	for k, v := range u.Extra {
		spec.Extra[k] = v
	}
	if a.Path != "" {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	} else {
		spec.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb, Group: v1alpha1.APIGroup,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	}
	review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	return review.Status.Allowed && !review.Status.Denied, review.Status.Reason, nil
}
