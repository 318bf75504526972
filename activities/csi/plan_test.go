package csi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// A run's claims are listed as its caller: the worker, which sees the
// claim, is not asked, and a refusal leaves the namespace's volumes out
// with a warning that says who may not list them.
func TestClaimsAreListedAsTheCaller(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Impersonate-User")+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,
		  "message":"persistentvolumeclaims is forbidden: User \"alice\" cannot list resource \"persistentvolumeclaims\""}`))
	}))
	defer srv.Close()
	worker := fake.NewClientset(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team-a"}})
	a := &Activities{Config: &rest.Config{Host: srv.URL}, Kube: worker}
	plan := cluster.StoredPlan{Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-a"}}, Namespaces: []string{"team-a"}}

	alice := &v1alpha1.Identity{Username: "alice"}
	kc, _, err := a.asCaller(alice)
	require.NoError(t, err)
	claims, unlisted, err := a.selectedClaims(context.Background(), kc, plan, alice)
	require.NoError(t, err)
	assert.Empty(t, claims)
	assert.Equal(t, []string{"alice /api/v1/namespaces/team-a/persistentvolumeclaims"}, asked)
	require.Len(t, unlisted, 1)
	assert.Contains(t, unlisted[0], "alice may not list persistentvolumeclaims in namespace team-a")

	kc, _, err = a.asCaller(nil)
	require.NoError(t, err)
	claims, unlisted, err = a.selectedClaims(context.Background(), kc, plan, nil)
	require.NoError(t, err)
	assert.Len(t, claims, 1, "a run on Temporal's path lists with the worker's rights")
	assert.Empty(t, unlisted)

	_, _, err = a.asCaller(&v1alpha1.Identity{Groups: []string{"system:masters"}})
	assert.Error(t, err, "an identity without a user is refused, not dropped")
}
