package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

const aliceUser = "system:serviceaccount:team-a:alice"

// TestRunsActAsTheirCaller drives the starter API with the token of a
// team's service account bound only inside its namespace: its backups
// read and its restores write what the cluster lets it, not what the
// worker may. It replays the escalation (a modifier moving a
// RoleBinding to cluster-admin into another namespace) and the ways
// around it, then the legitimate restore of the team's namespace.
func TestRunsActAsTheirCaller(t *testing.T) {
	t.Parallel()
	s, kc, api := newTeamsAPI(t)
	ctx := context.Background()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// alice is admin of team-a and may back up and restore there; viewer
	// may only view team-a (no Secrets) and back it up.
	alice := serviceAccountToken(t, kc, "team-a", "alice")
	viewer := serviceAccountToken(t, kc, "team-a", "viewer")
	bindClusterRole(t, kc, "team-a", "team-a", "alice", "admin")
	bindClusterRole(t, kc, "team-a", "team-a", "viewer", "view")
	grant(t, kc, "team-a", "alice", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups", "restores"}, Verbs: []string{"get", "create"}})
	grant(t, kc, "team-a", "viewer", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups"}, Verbs: []string{"get", "create"}})
	waitAllowed(t, kc, aliceUser, authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: v1alpha1.APIGroup, Resource: "restores"})
	waitAllowed(t, kc, aliceUser, authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Resource: "secrets"})
	waitAllowed(t, kc, "system:serviceaccount:team-a:viewer", authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: v1alpha1.APIGroup, Resource: "backups"})

	seedTeam(t, kc)

	// alice's backup of team-a: the Namespace object, which she may not
	// read, is skipped with the API server's reason; the rest is there.
	code, e := postJSON(t, api.URL+"/v1/backups", alice, `{"name":"team-a-alice","includedNamespaces":["team-a"]}`)
	require.Equal(t, http.StatusCreated, code, "%+v", e)
	b := waitBackupStatus(t, s, "team-a-alice")
	require.Equal(t, v1alpha1.PhaseCompleted, b.Phase, "%+v", b.Status)
	assert.Contains(t, skippedReason(b.Status.Skipped, "namespaces"), aliceUser+" may not list namespaces cluster-wide")
	assert.Equal(t, 1, b.Status.Resources["secrets"].Items, "alice, admin of team-a, backs up its Secret")
	// viewers and powerful, and the four bindings of alice's and viewer's rights
	assert.Equal(t, 6, b.Status.Resources["rolebindings.rbac.authorization.k8s.io"].Items)

	// The run records whom it acts as, and never the token.
	history := historyText(t, s, v1alpha1.BackupWorkflowID("team-a-alice"))
	assert.Contains(t, history, aliceUser)
	assert.NotContains(t, history, alice, "the caller's token is nowhere in the run's history")
	assert.NotContains(t, history, alice[strings.LastIndex(alice, ".")+1:], "not even the token's signature")
	stdout, stderr, exit := s.cli("backup", "describe", "team-a-alice")
	require.Equal(t, 0, exit, stderr)
	assert.Contains(t, stdout, "Acting as:")
	assert.Contains(t, stdout, aliceUser)

	// viewer may not list Secrets: they are skipped with the reason, the
	// rest of team-a is backed up.
	code, e = postJSON(t, api.URL+"/v1/backups", viewer, `{"name":"team-a-viewer","includedNamespaces":["team-a"]}`)
	require.Equal(t, http.StatusCreated, code, "%+v", e)
	v := waitBackupStatus(t, s, "team-a-viewer")
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Contains(t, skippedReason(v.Status.Skipped, "secrets"), "system:serviceaccount:team-a:viewer may not list secrets in namespaces team-a")
	assert.Zero(t, v.Status.Resources["secrets"].Items)
	assert.GreaterOrEqual(t, v.Status.Resources["configmaps"].Items, 1, "team-a's ConfigMap")

	// The escalation: a modifier moving the RoleBindings into
	// team-b, bound to cluster-admin. Refused before anything starts.
	escalate := `{"name":"escalate","backupName":"team-a-alice","includedNamespaces":["team-a"],` +
		`"includedResources":["rolebindings.rbac.authorization.k8s.io"],"resourceModifiers":{"inline":` +
		`"version: v1\nresourceModifierRules:\n- conditions: {groupResource: rolebindings.rbac.authorization.k8s.io}\n` +
		`  mergePatches: [{patchData: '{\"metadata\":{\"namespace\":\"team-b\"},\"roleRef\":{\"name\":\"cluster-admin\"}}'}]\n"}}`
	code, e = request(t, api.URL, alice, escalate)
	assert.Equal(t, http.StatusBadRequest, code, "%+v", e)
	assert.Contains(t, e.Error, "resourceModifierRules[0]")
	assert.Contains(t, e.Error, "may not change metadata.name or metadata.namespace")
	bindings, err := kc.RbacV1().RoleBindings("team-b").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, bindings.Items, "nothing is written into team-b")

	// The worker's backup of team-a holds the Namespace object; alice may
	// read it. Relabelling the Namespace through a modifier is hers to
	// do only if the cluster lets her patch Namespaces: it does not.
	s.backup(v1alpha1.BackupSpec{Name: "team-a-worker", IncludedNamespaces: []string{"team-a"}})
	relabel := `{"name":"relabel","backupName":"team-a-worker","includedNamespaces":["team-a"],"existingResourcePolicy":"update",` +
		`"includedResources":["namespaces"],"resourceModifiers":{"inline":` +
		`"version: v1\nresourceModifierRules:\n- conditions: {groupResource: namespaces}\n` +
		`  mergePatches: [{patchData: '{\"metadata\":{\"labels\":{\"pod-security.kubernetes.io/enforce\":\"privileged\"}}}'}]\n"}}`
	code, e = request(t, api.URL, alice, relabel)
	require.Equal(t, http.StatusCreated, code, "%+v", e)
	s.waitRestore("relabel", 2*time.Minute)
	ns, err := kc.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, ns.Labels, "pod-security.kubernetes.io/enforce", "the Namespace is not relabelled")
	out := s.outcomes("relabel")
	assert.NotEqual(t, v1alpha1.ItemRestored, out["namespaces /team-a"].Result, "%+v", out["namespaces /team-a"])

	// The legitimate path: everything of team-a is deleted, and alice
	// restores her backup. The RoleBinding to cluster-admin is hers to
	// restore only if she holds cluster-admin's rights: the API server
	// refuses it, and the rest is restored.
	deleteTeam(t, kc)
	code, e = request(t, api.URL, alice, `{"name":"team-a-back","backupName":"team-a-alice","includedNamespaces":["team-a"]}`)
	require.Equal(t, http.StatusCreated, code, "%+v", e)
	r := s.waitRestore("team-a-back", 2*time.Minute)
	require.Equal(t, v1alpha1.PhasePartiallyFailed, r.Phase, "%+v", r.Status)
	out = s.outcomes("team-a-back")
	powerful := out["rolebindings.rbac.authorization.k8s.io team-a/powerful"]
	assert.Equal(t, v1alpha1.ItemFailed, powerful.Result, "%+v", powerful)
	assert.Contains(t, powerful.Reason, "forbidden")
	assert.Equal(t, []string{"rolebindings.rbac.authorization.k8s.io team-a/powerful: " + powerful.Reason}, failedOutcomes(out), "only the escalating binding fails")
	_, err = kc.RbacV1().RoleBindings("team-a").Get(ctx, "powerful", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = kc.RbacV1().RoleBindings("team-a").Get(ctx, "viewers", metav1.GetOptions{})
	assert.NoError(t, err, "the RoleBinding to view is restored")
	secret, err := kc.CoreV1().Secrets("team-a").Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(secret.Data["password"]))
	_, err = kc.CoreV1().ConfigMaps("team-a").Get(ctx, "settings", metav1.GetOptions{})
	assert.NoError(t, err)
	_, err = kc.AppsV1().Deployments("team-a").Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err)
	restored, err := s.starter.GetRestore(ctx, "team-a-back")
	require.NoError(t, err)
	require.NotNil(t, restored.ActingAs)
	assert.Equal(t, aliceUser, restored.ActingAs.Username)
}

// TestSchedulesActAsWhoeverLastSetThem: a schedule made through the API
// acts as its creator at every run; updated by someone else, it acts as
// them from the next run on, so rights over kube-system cannot be
// borrowed by rewriting another's schedule.
func TestSchedulesActAsWhoeverLastSetThem(t *testing.T) {
	t.Parallel()
	s, kc, api := newTeamsAPI(t)
	ctx := context.Background()
	planner := serviceAccountToken(t, kc, "team-a", "planner")
	mallory := serviceAccountToken(t, kc, "team-a", "mallory")
	_, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cairn-schedulers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"schedules", "backups"}, Verbs: []string{"get", "list", "create", "update"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cairn-schedulers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cairn-schedulers"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "planner"}, {Kind: "ServiceAccount", Namespace: "team-a", Name: "mallory"}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	bindClusterRole(t, kc, "kube-system", "team-a", "planner", "view")
	waitAllowed(t, kc, "system:serviceaccount:team-a:planner", authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Resource: "configmaps"})
	waitAllowed(t, kc, "system:serviceaccount:team-a:mallory", authzv1.ResourceAttributes{Verb: "update", Group: v1alpha1.APIGroup, Resource: "schedules"})

	spec := `{"name":"sys","cron":"@yearly","retention":{"keepLast":5},"template":{"includedNamespaces":["kube-system"],"includedResources":["configmaps"]}}`
	code, e := postJSON(t, api.URL+"/v1/schedules", planner, spec)
	require.Equal(t, http.StatusCreated, code, "%+v", e)
	v, err := s.starter.GetSchedule(ctx, "sys")
	require.NoError(t, err)
	require.NotNil(t, v.Spec.BackupOptions.ActingAs, "the schedule records its creator")
	assert.Equal(t, "system:serviceaccount:team-a:planner", v.Spec.BackupOptions.ActingAs.Username)

	first := triggerAndWait(t, s, api.URL, planner, "sys", 1)
	assert.Positive(t, first.Status.Resources["configmaps"].Items, "planner may read kube-system's ConfigMaps: %+v", first.Status)
	require.NotNil(t, first.ActingAs)
	assert.Equal(t, "system:serviceaccount:team-a:planner", first.ActingAs.Username)

	code, e = putJSON(t, api.URL+"/v1/schedules/sys", mallory, spec)
	require.Equal(t, http.StatusOK, code, "%+v", e)
	second := triggerAndWait(t, s, api.URL, mallory, "sys", 2)
	assert.Zero(t, second.Status.Resources["configmaps"].Items, "the run acts as mallory, who may not read kube-system")
	assert.Contains(t, skippedReason(second.Status.Skipped, "configmaps"), "system:serviceaccount:team-a:mallory may not list configmaps in namespaces kube-system")

	// Mallory loses her cairn rights: the schedule's next run, still
	// acting as her, is refused when it starts.
	binding, err := kc.RbacV1().ClusterRoleBindings().Get(ctx, "cairn-schedulers", metav1.GetOptions{})
	require.NoError(t, err)
	binding.Subjects = binding.Subjects[:1]
	_, err = kc.RbacV1().ClusterRoleBindings().Update(ctx, binding, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitAccess(t, kc, "system:serviceaccount:team-a:mallory",
		authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Group: v1alpha1.APIGroup, Resource: "backups"}, false)
	code, e = postJSON(t, api.URL+"/v1/schedules/sys/trigger", planner, "")
	require.Equal(t, http.StatusAccepted, code, "%+v", e)
	third := waitScheduledFailure(t, s, "sys", first.Name, second.Name)
	assert.Contains(t, third.Status.FailureReason, "system:serviceaccount:team-a:mallory may not create backups.cairn.io in namespace kube-system")
	assert.Zero(t, third.Status.ItemsDone, "nothing was read")
}

// waitScheduledFailure waits for a failed run of schedule name other than
// the runs named in earlier.
func waitScheduledFailure(t *testing.T, s *stack, name string, earlier ...string) *starter.BackupView {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := s.starter.ListBackups(context.Background())
		require.NoError(t, err)
		for _, v := range list.Items {
			if strings.HasPrefix(v.Name, name+"-") && !slices.Contains(earlier, v.Name) && v.Phase == v1alpha1.PhaseFailed {
				return waitBackupStatus(t, s, v.Name)
			}
		}
		require.True(t, time.Now().Before(deadline), "schedule %s: no failed run appeared", name)
		time.Sleep(200 * time.Millisecond)
	}
}

// triggerAndWait runs schedule name now as token's holder and returns
// its n-th completed backup.
func triggerAndWait(t *testing.T, s *stack, base, token, name string, n int) *starter.BackupView {
	t.Helper()
	code, e := postJSON(t, base+"/v1/schedules/"+name+"/trigger", token, "")
	require.Equal(t, http.StatusAccepted, code, "%+v", e)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		v, err := s.starter.GetSchedule(context.Background(), name)
		require.NoError(t, err)
		if len(v.Backups) >= n && len(v.Running) == 0 {
			return waitBackupStatus(t, s, v.Backups[0].Name) // newest first
		}
		require.True(t, time.Now().Before(deadline), "schedule %s: run %d did not end: %+v", name, n, v)
		time.Sleep(200 * time.Millisecond)
	}
}

// putJSON puts body to url with token, and returns the status and the
// error the API answered.
func putJSON(t *testing.T, url, token, body string) (int, apiError) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e apiError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

// seedTeam creates team-a's objects: a Secret, a ConfigMap, a
// Deployment, a RoleBinding to view and one to cluster-admin (made by
// the cluster's admin).
func seedTeam(t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"mode": "fast"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = kc.AppsV1().Deployments("team-a").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "cairn.local/busybox:v1"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	for name, role := range map[string]string{"viewers": "view", "powerful": "cluster-admin"} {
		_, err = kc.RbacV1().RoleBindings("team-a").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "default"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// deleteTeam deletes what seedTeam made.
func deleteTeam(t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, kc.CoreV1().Secrets("team-a").Delete(ctx, "db", metav1.DeleteOptions{}))
	require.NoError(t, kc.CoreV1().ConfigMaps("team-a").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.NoError(t, kc.AppsV1().Deployments("team-a").Delete(ctx, "web", metav1.DeleteOptions{}))
	for _, name := range []string{"viewers", "powerful"} {
		require.NoError(t, kc.RbacV1().RoleBindings("team-a").Delete(ctx, name, metav1.DeleteOptions{}))
	}
}

// bindClusterRole binds ClusterRole role to the service account
// saNamespace/sa inside namespace ns.
func bindClusterRole(t *testing.T, kc kubernetes.Interface, ns, saNamespace, sa, role string) {
	t.Helper()
	_, err := kc.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + role},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: saNamespace, Name: sa}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitBackupStatus waits for a backup to end with its status read.
func waitBackupStatus(t *testing.T, s *stack, name string) *starter.BackupView {
	t.Helper()
	return s.waitDone(name, 2*time.Minute)
}

func skippedReason(skipped []v1alpha1.SkippedResource, resource string) string {
	for _, sk := range skipped {
		if sk.Resource == resource {
			return sk.Reason
		}
	}
	return ""
}

// historyText is a run's whole history as text, payloads included.
func historyText(t *testing.T, s *stack, workflowID string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range runHistory(t, s, workflowID) {
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		b.Write(data)
		b.WriteString(ev.String())
	}
	return b.String()
}
