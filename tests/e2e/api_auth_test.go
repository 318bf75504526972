package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/internal/apiauth"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

// TestAPIAuthorizesWithTheClusterRBAC drives the starter API with a
// service account's token against the sandbox's API server: TokenReview
// says who it is, SubjectAccessReview what a Role in its team's namespace
// lets it do.
func TestAPIAuthorizesWithTheClusterRBAC(t *testing.T) {
	s := newStack(t)
	s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	api := httptest.NewServer(starter.Handler(s.starter, zap.NewNop(), apiauth.Kubernetes(kc, nil)))
	defer api.Close()

	// The admin's backup of shop holds a ClusterRoleBinding.
	for _, ns := range []string{"shop", "team-a"} {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := kc.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "prices"},
		Data: map[string]string{"apple": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	escalation := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shop-is-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "alice"}}}
	_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, escalation, metav1.CreateOptions{})
	require.NoError(t, err)
	s.backup(workflows.BackupSpec{Name: "shop-full", IncludedNamespaces: []string{"shop"}, ClusterResources: workflows.ClusterResourcesInclude})
	require.NoError(t, kc.RbacV1().ClusterRoleBindings().Delete(ctx, escalation.Name, metav1.DeleteOptions{}))

	// alice may read shop's backups and restore into team-a, nothing more.
	alice := serviceAccountToken(t, kc, "team-a", "alice")
	grant(t, kc, "shop", "alice", rbacv1.PolicyRule{APIGroups: []string{starter.APIGroup}, Resources: []string{"backups"}, Verbs: []string{"get"}})
	grant(t, kc, "team-a", "alice", rbacv1.PolicyRule{APIGroups: []string{starter.APIGroup}, Resources: []string{"restores"}, Verbs: []string{"create"}})
	waitAllowed(t, kc, "system:serviceaccount:team-a:alice", authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: starter.APIGroup, Resource: "restores"})

	code, body := request(t, api.URL, "", `{"name":"anon","backupName":"shop-full"}`)
	assert.Equal(t, http.StatusUnauthorized, code, "no token: %s", body)
	code, body = request(t, api.URL, "not-a-token", `{"name":"anon","backupName":"shop-full"}`)
	assert.Equal(t, http.StatusUnauthorized, code, "a token the cluster does not accept: %s", body)

	code, body = request(t, api.URL, alice, `{"name":"to-system","backupName":"shop-full","includedNamespaces":["shop"],"namespaceMapping":{"shop":"kube-system"}}`)
	assert.Equal(t, http.StatusForbidden, code, "restore into kube-system: %s", body)
	assert.Contains(t, body.Error, "system:serviceaccount:team-a:alice may not create restores.cairn.io in namespace kube-system")
	code, body = request(t, api.URL, alice, `{"name":"everything","backupName":"shop-full"}`)
	assert.Equal(t, http.StatusForbidden, code, "a restore of every namespace needs cluster-wide rights: %s", body)
	code, body = request(t, api.URL, alice, `{"name":"escalate","backupName":"shop-full","includedNamespaces":["shop"],"namespaceMapping":{"shop":"team-a"},"clusterResources":"include"}`)
	assert.Equal(t, http.StatusForbidden, code, "asking for the backup's ClusterRoleBinding: %s", body)

	code, body = request(t, api.URL, alice, `{"name":"to-team-a","backupName":"shop-full","includedNamespaces":["shop"],"namespaceMapping":{"shop":"team-a"}}`)
	require.Equal(t, http.StatusCreated, code, "restore of shop into team-a: %s", body)
	v := s.waitRestore("to-team-a", 2*time.Minute)
	require.Equal(t, workflows.PhaseCompleted, v.Phase, "%+v", v.Status)
	cm, err := kc.CoreV1().ConfigMaps("team-a").Get(ctx, "prices", metav1.GetOptions{})
	require.NoError(t, err, "shop's ConfigMap is restored into team-a")
	assert.Equal(t, "1", cm.Data["apple"])
	_, err = kc.RbacV1().ClusterRoleBindings().Get(ctx, escalation.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the backup's ClusterRoleBinding is not restored by alice: %v", err)
	assert.Contains(t, v.Status.Skipped, workflows.SkippedResource{Resource: "clusterrolebindings.rbac.authorization.k8s.io",
		Reason: "system:serviceaccount:team-a:alice may not restore cluster-scoped objects (needs create restores.cairn.io cluster-wide)"})
}

func request(t *testing.T, base, token, body string) (int, apiError) {
	t.Helper()
	return postJSON(t, base+"/v1/restores", token, body)
}

// postJSON posts body to url with token (none when empty), and returns
// the status and the error the API answered.
func postJSON(t *testing.T, url, token, body string) (int, apiError) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e apiError
	_ = json.Unmarshal(data, &e)
	return resp.StatusCode, e
}

// serviceAccountToken creates a service account and returns a token of
// it, as `kubectl create token` does.
func serviceAccountToken(t *testing.T, kc kubernetes.Interface, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := kc.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// grant gives the service account team-a/sa rule in namespace ns.
func grant(t *testing.T, kc kubernetes.Interface, ns, sa string, rule rbacv1.PolicyRule) {
	t.Helper()
	allowInNamespace(t, kc, ns, "team-a", sa, rule)
}

// waitAllowed waits until the API server's RBAC cache has the grants.
func waitAllowed(t *testing.T, kc kubernetes.Interface, user string, attrs authzv1.ResourceAttributes) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
				ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		require.NoError(t, err)
		if review.Status.Allowed {
			return
		}
		require.True(t, time.Now().Before(deadline), "RBAC never allowed %s %+v", user, attrs)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDevAPINeedsItsToken starts cairn dev with its API: the token it
// generates, private to its user, opens the API; nothing else does, and a
// page in a browser cannot drive it.
func TestDevAPINeedsItsToken(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "cairn")
	apiAddr := freePort(t)
	startProc(t, "dev", "dev", "--no-worker", "--ui-address", "", "--data-dir", dataDir,
		"--temporal-address", freePort(t), "--api-address", apiAddr)
	base := "http://" + apiAddr
	tokenFile := filepath.Join(dataDir, "api-token")
	deadline := time.Now().Add(90 * time.Second)
	for {
		// /healthz is anonymous by default, and answers 200 once Temporal does.
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "cairn dev's API did not come up: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
	info, err := os.Stat(tokenFile)
	require.NoError(t, err, "cairn dev writes its API token into the data dir")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	data, err := os.ReadFile(tokenFile)
	require.NoError(t, err)
	token := strings.TrimSpace(string(data))

	get := func(token string, header ...string) int {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/backups", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get(""))
	assert.Equal(t, http.StatusUnauthorized, get(token+"x"))
	assert.Equal(t, http.StatusOK, get(token))
	assert.Equal(t, http.StatusForbidden, get(token, "Origin", "https://evil.example"), "a cross-site request, even with the token")

	req, err := http.NewRequest(http.MethodPost, base+"/v1/backups", strings.NewReader(`{"name":"exfil"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "a text/plain body, as a page's form could send")

	// The exfiltration, with the token: a location of the
	// caller's is refused, as is a name the operator did not give.
	evil := filepath.Join(t.TempDir(), "evil-loc")
	code, e := postJSON(t, base+"/v1/backups", token, `{"name":"exfil","storageLocation":"file://`+evil+`"}`)
	assert.Equal(t, http.StatusBadRequest, code, "%+v", e)
	assert.Contains(t, e.Error, "a location is named, not given as a URL")
	code, e = postJSON(t, base+"/v1/backups", token, `{"name":"exfil","storageLocation":"elsewhere"}`)
	assert.Equal(t, http.StatusBadRequest, code, "%+v", e)
	assert.Contains(t, e.Error, `unknown location "elsewhere"`)
	assert.NoDirExists(t, evil, "nothing was written there")
}
