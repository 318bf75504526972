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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/starter/httpapi"
)

// TestAPIAuthorizesWithTheClusterRBAC drives the starter API with a
// service account's token against the sandbox's API server: TokenReview
// says who it is, SubjectAccessReview what a Role in its team's namespace
// lets it do.
func TestAPIAuthorizesWithTheClusterRBAC(t *testing.T) {
	t.Parallel()
	s, kc, api := newTeamsAPI(t)
	ctx := context.Background()

	// The admin's backup of shop holds a ClusterRoleBinding.
	escalation := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shop-is-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "alice"}}}
	_, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, escalation, metav1.CreateOptions{})
	require.NoError(t, err)
	s.backup(v1alpha1.BackupSpec{Name: "shop-full", IncludedNamespaces: []string{"shop"}, ClusterResources: v1alpha1.ClusterResourcesInclude})
	require.NoError(t, kc.RbacV1().ClusterRoleBindings().Delete(ctx, escalation.Name, metav1.DeleteOptions{}))

	// alice may read shop's backups and restore into team-a, nothing more.
	alice := serviceAccountToken(t, kc, "team-a", "alice")
	grant(t, kc, "shop", "alice", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups"}, Verbs: []string{"get"}})
	grant(t, kc, "team-a", "alice", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"restores"}, Verbs: []string{"create"}})
	// The restore writes as alice: she needs the rights to create its
	// objects in team-a.
	bindClusterRole(t, kc, "team-a", "team-a", "alice", "edit")
	waitAllowed(t, kc, "system:serviceaccount:team-a:alice", authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: v1alpha1.APIGroup, Resource: "restores"})
	waitAllowed(t, kc, "system:serviceaccount:team-a:alice", authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Resource: "configmaps"})

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
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	cm, err := kc.CoreV1().ConfigMaps("team-a").Get(ctx, "prices", metav1.GetOptions{})
	require.NoError(t, err, "shop's ConfigMap is restored into team-a")
	assert.Equal(t, "1", cm.Data["apple"])
	_, err = kc.RbacV1().ClusterRoleBindings().Get(ctx, escalation.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the backup's ClusterRoleBinding is not restored by alice: %v", err)
	assert.Contains(t, v.Status.Skipped, v1alpha1.SkippedResource{Resource: "clusterrolebindings.rbac.authorization.k8s.io",
		Reason: "system:serviceaccount:team-a:alice may not restore cluster-scoped objects (needs create restores.cairn.io cluster-wide)"})
}

// TestCLIThroughTheAPI runs the CLI with --server against the starter
// API, authenticated as kubectl would be: with the kubeconfig user's
// token, or --token. What RBAC allows works, --wait and logs included;
// what it does not is exit 7, and no token at all is a usage error.
func TestCLIThroughTheAPI(t *testing.T) {
	t.Parallel()
	s, kc, api := newTeamsAPI(t)
	ctx := context.Background()

	// operator may back up and read every backup; alice only shop's.
	operator := serviceAccountToken(t, kc, "team-a", "operator")
	_, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cairn-backup-operator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups", "backups/log"}, Verbs: []string{"get", "list", "create"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cairn-backup-operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cairn-backup-operator"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "operator"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	alice := serviceAccountToken(t, kc, "team-a", "alice")
	grant(t, kc, "shop", "alice", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups"}, Verbs: []string{"create", "get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}})
	waitAllowed(t, kc, "system:serviceaccount:team-a:operator", authzv1.ResourceAttributes{Verb: "get", Group: v1alpha1.APIGroup, Resource: "backups", Subresource: "log"})
	waitAllowed(t, kc, "system:serviceaccount:team-a:alice", authzv1.ResourceAttributes{Namespace: "shop", Verb: "create", Group: v1alpha1.APIGroup, Resource: "backups"})

	viaAPI := func(kubeconfig string, args ...string) (string, string, int) {
		return runCLI(t, append(args, "--server", api.URL, "--kubeconfig", kubeconfig, "--temporal-address", "127.0.0.1:1")...)
	}
	operatorConfig := kubeconfigWithToken(t, s, operator)
	stdout, stderr, code := viaAPI(operatorConfig, "backup", "create", "via-api", "--include-namespaces", "shop", "--wait")
	require.Equal(t, 0, code, "the kubeconfig's token, through the API, with --wait: %s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "Completed")
	stdout, stderr, code = viaAPI(operatorConfig, "backup", "logs", "via-api")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "via-api")
	stdout, stderr, code = viaAPI(operatorConfig, "backup", "list", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var list starter.BackupList
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "via-api", list.Items[0].Name)

	aliceConfig := kubeconfigWithToken(t, s, alice)
	_, stderr, code = viaAPI(aliceConfig, "backup", "create", "alice-system", "--include-namespaces", "kube-system")
	assert.Equal(t, starter.ExitDenied, code, "a namespace alice may not back up: %s", stderr)
	assert.Contains(t, stderr, "may not create backups.cairn.io in namespace kube-system")
	_, stderr, code = viaAPI(aliceConfig, "backup", "create", "alice-shop", "--include-namespaces", "shop")
	assert.Equal(t, 0, code, "alice may back up shop: %s", stderr)
	_, stderr, code = viaAPI(aliceConfig, "backup", "get", "via-api")
	assert.Equal(t, starter.ExitDenied, code, "alice may not read backups: %s", stderr)

	// -n shop: the API's paths of shop, where alice's Role is all she
	// needs; names are shop's own, and what she starts takes shop only.
	waitAllowed(t, kc, "system:serviceaccount:team-a:alice", authzv1.ResourceAttributes{Namespace: "shop", Verb: "list", Group: v1alpha1.APIGroup, Resource: "backups"})
	stdout, stderr, code = viaAPI(aliceConfig, "-n", "shop", "backup", "create", "nightly", "--wait")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	v := s.waitDone("shop.nightly", time.Minute)
	assert.Equal(t, []string{"shop"}, v.Spec.IncludedNamespaces)
	assert.Equal(t, v1alpha1.ClusterResourcesExclude, v.Spec.ClusterResources)
	stdout, stderr, code = viaAPI(aliceConfig, "-n", "shop", "backup", "list", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var shops starter.BackupList
	require.NoError(t, json.Unmarshal([]byte(stdout), &shops))
	require.Len(t, shops.Items, 1, "shop's runs only: %s", stdout)
	assert.Equal(t, "shop.nightly", shops.Items[0].Name)
	_, stderr, code = viaAPI(aliceConfig, "-n", "shop", "backup", "get", "nightly")
	assert.Equal(t, 0, code, "by shop's own name: %s", stderr)
	_, stderr, code = viaAPI(aliceConfig, "-n", "shop", "backup", "create", "wide", "--include-namespaces", "shop,kube-system")
	assert.Equal(t, starter.ExitInvalid, code, stderr)
	assert.Contains(t, stderr, `includedNamespaces: "kube-system" is not this namespace`)
	_, stderr, code = viaAPI(aliceConfig, "-n", "team-a", "backup", "list")
	assert.Equal(t, starter.ExitDenied, code, "no Role in team-a: %s", stderr)
	assert.Contains(t, stderr, "may not list backups.cairn.io in namespace team-a")

	// --token wins over the kubeconfig; a token the cluster refuses is 401.
	_, stderr, code = viaAPI(aliceConfig, "backup", "get", "via-api", "--token", operator)
	assert.Equal(t, 0, code, stderr)
	_, stderr, code = viaAPI(aliceConfig, "backup", "list", "--token", "not-a-token")
	assert.Equal(t, starter.ExitDenied, code, stderr)
	// A kubeconfig user with a client certificate only has no token to send.
	_, stderr, code = viaAPI(s.cluster.KubeconfigPath(), "backup", "list")
	assert.Equal(t, starter.ExitInvalid, code, stderr)
	assert.Contains(t, stderr, "--token")
	_, stderr, code = runCLI(t, "backup", "list", "--server", "http://example.com:8080", "--token", operator)
	assert.Equal(t, starter.ExitInvalid, code, "a token over plain http to another host: %s", stderr)
}

// kubeconfigWithToken writes the sandbox's kubeconfig with its user
// replaced by one that authenticates with token.
func kubeconfigWithToken(t *testing.T, s *stack, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.cluster.KubeconfigPath())
	require.NoError(t, err)
	ctx := cfg.Contexts[cfg.CurrentContext]
	require.NotNil(t, ctx)
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{ctx.AuthInfo: {Token: token}}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// newTeamsAPI is a stack with a worker, the starter API authenticating
// and authorizing with the sandbox cluster, and namespaces shop (with
// ConfigMap prices) and team-a.
func newTeamsAPI(t *testing.T) (*stack, kubernetes.Interface, *httptest.Server) {
	t.Helper()
	// Its own cluster: the tests bind cluster roles and use namespaces
	// (shop, team-a) that each of them seeds.
	s := newStack(t)
	s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	api := httptest.NewServer(httpapi.Handler(s.starter, zap.NewNop(), httpapi.KubernetesAuth(kc, nil)))
	t.Cleanup(api.Close)
	for _, ns := range []string{"shop", "team-a"} {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := kc.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "prices"},
		Data: map[string]string{"apple": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return s, kc, api
}

func request(t *testing.T, base, token, body string) (int, apiError) {
	t.Helper()
	return postJSON(t, base+"/v1/restores", token, body)
}

// postJSON posts body to url with token (none when empty), and returns
// the status and the error the API answered.
func postJSON(t *testing.T, url, token, body string) (int, apiError) {
	t.Helper()
	return postJSONWith(t, http.DefaultClient, url, token, body)
}

func postJSONWith(t *testing.T, client *http.Client, url, token, body string) (int, apiError) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
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
	_, err := kc.CoreV1().ServiceAccounts(namespace).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tokenOf(t, kc, namespace, name)
}

// tokenOf is a token of the service account namespace/name.
func tokenOf(t *testing.T, kc kubernetes.Interface, namespace, name string) string {
	t.Helper()
	tr, err := kc.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// grant gives the service account team-a/sa rules in namespace ns.
func grant(t *testing.T, kc kubernetes.Interface, ns, sa string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	allowInNamespace(t, kc, ns, "team-a", sa, rules...)
}

// waitAllowed waits until the API server's RBAC cache has the grants.
func waitAllowed(t *testing.T, kc kubernetes.Interface, user string, attrs authzv1.ResourceAttributes) {
	t.Helper()
	waitAccess(t, kc, user, attrs, true)
}

// waitAccess waits until RBAC answers allowed for user's attrs: bindings
// reach the authorizer's cache a moment after they are written.
func waitAccess(t *testing.T, kc kubernetes.Interface, user string, attrs authzv1.ResourceAttributes, allowed bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
				ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		require.NoError(t, err)
		if review.Status.Allowed == allowed {
			return
		}
		require.True(t, time.Now().Before(deadline), "RBAC never answered allowed=%v for %s %+v", allowed, user, attrs)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDevAPINeedsItsToken starts cairn dev with its API: the token it
// generates, private to its user, opens the API; nothing else does, and a
// page in a browser cannot drive it.
func TestDevAPINeedsItsToken(t *testing.T) {
	t.Parallel()
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
