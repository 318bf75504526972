package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/controller"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/webhook"
)

const tenantWebhookConfig = "cairn-e2e-resources"

// checkTenancy: with cairn's admission webhook in front of the API
// server, a team's service account whose Role allows backups in its
// namespace backs up and restores that namespace through resources, as
// itself; it cannot reach another namespace, forge or change whom a
// resource acts as, restore another namespace's backup, or take another
// namespace's names. Its Schedule runs as it, and its runs show up in its
// namespace.
func checkTenancy(t *testing.T, s *stack, kc kubernetes.Interface, admin client.WithWatch, ops string) {
	ctx := context.Background()
	serveTestWebhook(t, kc, ops)

	const teamA, teamB = "crd-team-a", "crd-team-b"
	for _, ns := range []string{teamA, teamB} {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"},
			Data: map[string]string{"team": ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	alice := teamMember(t, s, kc, teamA, "alice")
	waitWebhookInForce(t, kc, admin, teamB, tenantWebhookConfig, time.Nanosecond)
	stop := runControllerWith(t, s, controller.Options{Namespace: ops, WebhookConfiguration: tenantWebhookConfig,
		WebhookPropagation: time.Nanosecond, MirrorInterval: 5 * time.Second})

	// A Backup of the team's namespace, with a forged identity: it acts
	// as alice, the webhook's record.
	mine := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: teamA, Annotations: map[string]string{
		v1alpha1.AnnotationActingAs: v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "system:admin", Groups: []string{"system:masters"}})}}}
	require.NoError(t, alice.Create(ctx, mine))
	b := waitResourceDone(t, admin, &v1alpha1.BackupList{}, teamA, mine.Name).(*v1alpha1.Backup)
	require.Equal(t, v1alpha1.PhaseCompleted, b.Status.Phase, "%+v", b.Status)
	assert.Contains(t, b.Status.ActingAs, "system:serviceaccount:"+teamA+":alice", "the creator, not the forged annotation")
	assert.Equal(t, teamA+".mine", b.Status.RunName, "a team's names are its own")
	v, err := s.starter.GetBackup(ctx, b.Status.RunName)
	require.NoError(t, err)
	assert.Equal(t, []string{teamA}, v.Spec.IncludedNamespaces)
	assert.Equal(t, v1alpha1.ClusterResourcesExclude, v.Spec.ClusterResources)

	// What alice may not do is refused at admission, the field named.
	for _, c := range []struct {
		obj  client.Object
		want string
	}{
		{&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: teamA},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{teamA, teamB}}}, `spec.includedNamespaces: "` + teamB + `"`},
		{&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: teamA},
			Spec: v1alpha1.BackupSpec{ClusterResources: v1alpha1.ClusterResourcesInclude}}, "spec.clusterResources"},
		{&v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "steal", Namespace: teamA},
			Spec: v1alpha1.RestoreSpec{BackupName: teamB + ".mine"}}, "names a backup of another namespace"},
		{&v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "spill", Namespace: teamA},
			Spec: v1alpha1.RestoreSpec{BackupName: "mine", NamespaceMapping: map[string]string{teamA: teamB}}}, "spec.namespaceMapping"},
		{&v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: teamA},
			Spec: v1alpha1.ScheduleSpec{Cron: "0 2 * * *", Template: v1alpha1.BackupSpec{IncludedNamespaces: []string{teamB}}}},
			"spec.template.includedNamespaces"},
	} {
		err := alice.Create(ctx, c.obj)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), c.want)
	}
	b.Annotations[v1alpha1.AnnotationActingAs] = v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "system:admin"})
	err = alice.Update(ctx, b)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), v1alpha1.AnnotationActingAs)

	// Another team's Backup of the same name is another backup, and the
	// API gives nobody a name of the teams'.
	theirs := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: teamB}}
	require.NoError(t, admin.Create(ctx, theirs))
	tb := waitResourceDone(t, admin, &v1alpha1.BackupList{}, teamB, theirs.Name).(*v1alpha1.Backup)
	require.Equal(t, v1alpha1.PhaseCompleted, tb.Status.Phase, "%+v", tb.Status)
	assert.Equal(t, teamB+".mine", tb.Status.RunName)
	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: teamA + ".next"}})
	var invalid *starter.InvalidError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, err.Error(), "names with a dot are kept")

	// The team restores its own backup, as itself, into its namespace.
	require.NoError(t, kc.CoreV1().ConfigMaps(teamA).Delete(ctx, "owner", metav1.DeleteOptions{}))
	back := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: teamA}, Spec: v1alpha1.RestoreSpec{BackupName: "mine"}}
	require.NoError(t, alice.Create(ctx, back))
	r := waitResourceDone(t, admin, &v1alpha1.RestoreList{}, teamA, back.Name).(*v1alpha1.Restore)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Status.Phase, "%+v", r.Status)
	assert.Contains(t, r.Status.ActingAs, ":alice")
	cm, err := kc.CoreV1().ConfigMaps(teamA).Get(ctx, "owner", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, teamA, cm.Data["team"], "team-a's data, from team-a's backup")

	// The CLI makes the same resources from alice's kubeconfig: never
	// asking Temporal (there is none at its address), acting as her, and
	// refused by the webhook where she reaches beyond her namespace.
	aliceConfig := kubeconfigWithToken(t, s, tokenOf(t, kc, teamA, "alice"))
	asAlice := func(args ...string) (string, string, int) {
		return runCLI(t, append(args, "-n", teamA, "--kubeconfig", aliceConfig, "--temporal-address", "127.0.0.1:1")...)
	}
	stdout, stderr, code := asAlice("backup", "create", "by-cli", "--wait")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "Backup "+teamA+"/by-cli: Completed")
	byCLI := &v1alpha1.Backup{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: teamA, Name: "by-cli"}, byCLI))
	assert.Equal(t, teamA+".by-cli", byCLI.Status.RunName)
	assert.Contains(t, byCLI.Status.ActingAs, ":alice")
	stdout, stderr, code = asAlice("backup", "create", "by-cli")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "already exists with the same spec")
	_, stderr, code = asAlice("backup", "create", "by-cli", "--ttl", "1h")
	assert.Equal(t, starter.ExitConflict, code, "the same name with another spec: %s", stderr)
	_, stderr, code = asAlice("backup", "create", "by-cli-wide", "--include-namespaces", teamA+","+teamB)
	assert.Equal(t, starter.ExitDenied, code, stderr)
	assert.Contains(t, stderr, `spec.includedNamespaces: "`+teamB+`"`)
	_, stderr, code = asAlice("backup", "create", "by-cli-fast", "--page-size", "10")
	assert.Equal(t, starter.ExitInvalid, code, "a run's options need --direct: %s", stderr)
	assert.Contains(t, stderr, "--direct")

	// The team's Schedule runs as alice, in its namespace; its runs show
	// up there as Backups; deleting it deletes its Temporal Schedule.
	keep := 2
	sched := &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: teamA},
		Spec: v1alpha1.ScheduleSpec{Cron: "0 2 * * *", Retention: v1alpha1.RetentionPolicy{KeepLast: &keep}}}
	require.NoError(t, alice.Create(ctx, sched))
	sc := watchResource(t, admin, &v1alpha1.ScheduleList{}, teamA, sched.Name, scheduleObserved).(*v1alpha1.Schedule)
	assert.Contains(t, sc.Status.ActingAs, ":alice", "%+v", sc.Status)
	tv, err := s.starter.GetSchedule(ctx, teamA+".nightly")
	require.NoError(t, err, "a team's schedule is named in its namespace")
	assert.Equal(t, []string{teamA}, tv.Spec.Template.IncludedNamespaces)
	_, err = s.starter.TriggerSchedule(ctx, teamA+".nightly")
	require.NoError(t, err)
	run := watchResource(t, admin, &v1alpha1.BackupList{}, teamA, "", func(ev watch.Event) bool {
		b, ok := ev.Object.(*v1alpha1.Backup)
		return ok && strings.HasPrefix(b.Name, "nightly-") && b.Status.Phase.Done()
	}).(*v1alpha1.Backup)
	assert.Equal(t, v1alpha1.PhaseCompleted, run.Status.Phase, "%+v", run.Status)
	assert.True(t, strings.HasPrefix(run.Status.RunName, teamA+".nightly-"), run.Status.RunName)
	assert.Contains(t, run.Status.ActingAs, ":alice", "the schedule's run acts as whoever set the schedule")
	require.NoError(t, alice.Delete(ctx, sc))
	waitResourceGone(t, admin, &v1alpha1.ScheduleList{}, teamA, sched.Name)
	_, err = s.starter.GetSchedule(ctx, teamA+".nightly")
	assert.ErrorIs(t, err, starter.ErrNotFound)

	// The chart's GitOps example, applied as Argo CD does (server-side
	// apply): it converges and reports health, and the controller never
	// writes its spec, so the manifest is never fought over.
	applyExample(t, alice, teamA)
	sc = watchResource(t, admin, &v1alpha1.ScheduleList{}, teamA, "nightly", scheduleObserved).(*v1alpha1.Schedule)
	assert.Equal(t, "Healthy", sc.Status.Health, "%+v", sc.Status)
	assert.Equal(t, sc.Generation, applyExample(t, alice, teamA).GetGeneration(), "applied again, nothing changes")
	for _, f := range sc.ManagedFields {
		if f.Manager != "argocd" && f.FieldsV1 != nil {
			assert.NotContains(t, string(f.FieldsV1.Raw), `"f:spec"`, "%s writes the spec (%s)", f.Manager, f.Subresource)
		}
	}

	// Deleting the team's Backup deletes its data, not team-b's.
	require.NoError(t, alice.Delete(ctx, b))
	waitResourceGone(t, admin, &v1alpha1.BackupList{}, teamA, b.Name)
	v, err = s.starter.GetBackup(ctx, teamB+".mine")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
	stop()
}

// serveTestWebhook serves cairn's admission webhook in the test's process
// and puts it in front of the shared cluster's resources until the test
// ends, as cairn dev does.
func serveTestWebhook(t *testing.T, kc kubernetes.Interface, ops string) {
	serve, err := webhook.Loopback(context.Background(), kc, tenantWebhookConfig, ops, zaptest.NewLogger(t))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-errc, "the webhook stops and its configuration goes")
	})
}

// waitWebhookInForce makes dry-run Backups in ns until one is recorded by
// the webhook of configuration name, created later than propagation after
// it: the controller trusts the creators of resources made from then on.
// Creation times are whole seconds, so this waits for a clock, not for a
// guess at how fast the cluster is.
func waitWebhookInForce(t *testing.T, kc kubernetes.Interface, admin client.Client, ns, name string, propagation time.Duration) {
	ctx := context.Background()
	cfg, err := kc.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for i := 0; ; i++ {
		probe := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
		require.NoError(t, admin.Create(ctx, probe, client.DryRunAll))
		if probe.Annotations[v1alpha1.AnnotationActingAs] != "" && probe.CreationTimestamp.After(cfg.CreationTimestamp.Add(propagation)) {
			return
		}
		require.Less(t, i, 2000, "the webhook never took effect") // a bound for a broken cluster, not a verdict
		time.Sleep(50 * time.Millisecond)
	}
}

// resourceClient is a client of cairn's resources as cfg's user.
func resourceClient(t *testing.T, cfg *rest.Config) client.WithWatch {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// applyExample applies the chart's example Schedule into ns with
// server-side apply, as a GitOps tool does, and returns what the API
// server answered.
func applyExample(t *testing.T, c client.Client, ns string) *unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join(chartDir(t), "examples", "team-schedule.yaml"))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(data, &u.Object))
	u.SetNamespace(ns)
	require.NoError(t, c.Patch(context.Background(), u, client.Apply, client.FieldOwner("argocd"), client.ForceOwnership))
	return u
}

// teamMember is a client that acts as service account name of ns, whose
// Role there lets it back up and restore the namespace.
func teamMember(t *testing.T, s *stack, kc kubernetes.Interface, ns, name string) client.WithWatch {
	ctx := context.Background()
	_, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.APIGroup}, Resources: []string{"backups", "restores", "schedules"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "serviceaccounts", "pods", "services", "persistentvolumeclaims"},
			Verbs: []string{"*"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(s.cluster.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
	return resourceClient(t, cfg)
}
