package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/starter"
)

// fakeTokenReviews answers TokenReviews for "good" as alice, with the
// audiences of the request (as the API server does for a token minted
// for them) unless tokenAudiences says otherwise, and counts them.
func fakeTokenReviews(tokenAudiences []string, reviews *int) *fake.Clientset {
	kc := fake.NewSimpleClientset()
	kc.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		*reviews++
		tr := action.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if tr.Spec.Token == "good" {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: tokenAudiences,
				User: authnv1.UserInfo{Username: "alice", Groups: []string{"team-a"}}}
		}
		return true, tr, nil
	})
	return kc
}

func TestTokensMustBeMeantForTheAPI(t *testing.T) {
	var reviews int
	auth := KubernetesAuth(fakeTokenReviews([]string{"https://kubernetes.default.svc"}, &reviews), nil, "cairn")
	_, err := auth.Authenticate(context.Background(), "good")
	var unauthenticated *starter.UnauthenticatedError
	require.ErrorAs(t, err, &unauthenticated, "a token minted for the API server, not for cairn")
	assert.Contains(t, err.Error(), "not meant for this API")

	auth = KubernetesAuth(fakeTokenReviews([]string{"cairn"}, &reviews), nil, "cairn")
	u, err := auth.Authenticate(context.Background(), "good")
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)
	assert.True(t, auth.ActAsCaller, "runs act as the cluster's users")
}

func TestReviewsAreReusedBriefly(t *testing.T) {
	var reviews int
	auth := KubernetesAuth(fakeTokenReviews(nil, &reviews), nil)
	for range 3 {
		_, err := auth.Authenticate(context.Background(), "good")
		require.NoError(t, err)
	}
	assert.Equal(t, 1, reviews, "one review for three requests with one token")
	_, err := auth.Authenticate(context.Background(), "bad")
	require.Error(t, err)
	_, err = auth.Authenticate(context.Background(), "bad")
	require.Error(t, err)
	assert.Equal(t, 3, reviews, "a refused token is asked about every time")
}

func TestReviewCacheExpiresAndStaysBounded(t *testing.T) {
	now := time.Unix(0, 0)
	c := newReviewCache[int](5*time.Second, 2)
	c.now = func() time.Time { return now }
	c.put("a", 1)
	c.put("b", 2)
	c.put("c", 3)
	_, ok := c.get("c")
	assert.False(t, ok, "a full cache of live answers takes no more")
	v, ok := c.get("a")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	now = now.Add(5 * time.Second)
	_, ok = c.get("a")
	assert.False(t, ok, "expired")
	c.put("c", 3)
	v, ok = c.get("c")
	assert.True(t, ok, "expired answers make room")
	assert.Equal(t, 3, v)
	for k := range c.entries {
		assert.Len(t, k, 32, "keys are digests, never the token")
	}
}
