package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/starter/remote"
)

// TestNamespaceRunsInAnotherCluster: a namespace whose Deployment runs
// under a service account bound by a ClusterRoleBinding, with a
// PriorityClass and a StorageClass of its own, is backed up in one
// cluster and restored, under another name, into a second cluster that
// has none of them (it has the sandbox's node): its pods run there, its
// claim is bound, and its service account may do what it could before.
// Objects of another namespace stay out of the backup; an object the
// target has already is not changed. A dry run first, through the API and
// the CLI, names type by type what the backup then takes, and leaves
// nothing behind.
func TestNamespaceRunsInAnotherCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own cluster: the workload has cluster-scoped objects
	// (PriorityClass, StorageClass, cluster RBAC) that the test counts.
	src := newStack(t)
	src.startWorker()
	kc := fastClient(t, src.cluster.Config())
	makeWorkload(t, kc, "rel")
	makeWorkload(t, kc, "other")

	// The dry run, through the API, then the backup it describes.
	api := devAPI(t, src)
	rc, err := remote.New(api.URL, api.Client())
	require.NoError(t, err)
	dry, err := rc.DryRunBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "rel-1", IncludedNamespaces: []string{"rel"}}})
	require.NoError(t, err)
	recordHistory(t, src, dry.WorkflowID, "backup_dry_run_baseline.json")
	assert.Empty(t, scratchKeys(t, src.location), "a dry run leaves nothing in the location")
	_, err = src.starter.GetBackup(ctx, "rel-1")
	require.ErrorIs(t, err, starter.ErrNotFound, "a dry run is no backup")
	out, stderr, code := src.cli("backup", "create", "rel-1", "--include-namespaces", "rel", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Dry run of backup:")
	assert.Regexp(t, `priorityclasses.scheduling.k8s.io\s+1\s+rel-critical`, out)

	src.backup(v1alpha1.BackupSpec{Name: "rel-1", IncludedNamespaces: []string{"rel"}})
	counts := tarballCounts(t, src, "rel-1")
	want := map[string]map[string]int{
		objects.ClusterRoleBindingsResource: {"rel-node-reader": 1},
		objects.ClusterRolesResource:        {"rel-node-reader": 1, "rel-config-editor": 1},
		objects.PriorityClassesResource:     {"rel-critical": 1},
		objects.StorageClassesResource:      {"rel-fast": 1},
	}
	for gr, names := range want {
		assert.Equal(t, names, counts[gr], "%s in the backup", gr)
		assert.ElementsMatch(t, slices.Collect(maps.Keys(names)), dry.Related[gr], "the dry run names the related %s", gr)
	}
	taken := map[string]int{}
	for gr, objs := range counts {
		taken[gr] = len(objs)
	}
	for gr, n := range dry.Resources {
		if n == 0 {
			delete(dry.Resources, gr)
		}
	}
	assert.Equal(t, taken, dry.Resources, "the dry run counted what the backup took, type by type")

	off := false
	src.backup(v1alpha1.BackupSpec{Name: "rel-off", IncludedNamespaces: []string{"rel"}, RelatedClusterResources: &off})
	counts = tarballCounts(t, src, "rel-off")
	for gr := range want {
		assert.Empty(t, counts[gr], "%s without related cluster resources", gr)
	}
	assert.Equal(t, 1, counts["deployments.apps"]["rel/web"])

	dst := newNodeStackAt(t, src.location)
	dst.startWorker()
	dc := fastClient(t, dst.cluster.Config())
	// The target has the role already, with a rule more: a namespace
	// restore leaves it as it is, whatever the existing-resource policy,
	// and warns.
	editor := configEditor()
	editor.Rules = append(editor.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	_, err = dc.RbacV1().ClusterRoles().Create(ctx, editor, metav1.CreateOptions{})
	require.NoError(t, err)

	restoreReq := starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rel-r1", BackupName: "rel-1",
		NamespaceMapping: map[string]string{"rel": "rel-copy"}, ExistingResourcePolicy: v1alpha1.ExistingResourceUpdate}}
	// The restore's dry run, through the API, while the cluster is
	// watched: it writes nothing.
	dstAPI := devAPI(t, dst)
	drc, err := remote.New(dstAPI.URL, dstAPI.Client())
	require.NoError(t, err)
	writes := watchWrites(t, dst.cluster.Config(), "rel-copy")
	dryRestore, err := drc.DryRunRestore(ctx, restoreReq)
	require.NoError(t, err)
	assert.Empty(t, writes(), "the restore's dry run wrote nothing to the cluster")
	// What a watch delivers late, the objects' absence shows.
	_, err = dc.CoreV1().Namespaces().Get(ctx, "rel-copy", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no namespace rel-copy after the dry run: %v", err)
	_, err = dc.SchedulingV1().PriorityClasses().Get(ctx, "rel-critical", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no PriorityClass after the dry run: %v", err)
	_, err = dc.RbacV1().ClusterRoleBindings().Get(ctx, "rel-node-reader", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding after the dry run: %v", err)
	unchanged, err := dc.RbacV1().ClusterRoles().Get(ctx, "rel-config-editor", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, unchanged.Rules, 2)
	recordHistory(t, dst, dryRestore.WorkflowID, "restore_dry_run_completed.json")
	assert.Empty(t, scratchKeys(t, dst.location), "a dry run leaves nothing in the location")
	assert.Equal(t, map[string]string{"rel": "rel-copy"}, dryRestore.NamespaceMapping)

	r := dst.restore(restoreReq, 3*time.Minute)
	outcomes := dst.outcomes("rel-r1")
	// Object for object, the dry run said what the restore did. The
	// objects the cluster's controllers make in every new namespace are
	// left out: whether they exist when the restore reaches them is a
	// race the dry run cannot know.
	madeByControllers := map[string]bool{"serviceaccounts rel-copy/default": true, "configmaps rel-copy/kube-root-ca.crt": true}
	said, did := map[string]string{}, map[string]string{}
	for _, o := range dryRestore.Resources {
		for _, it := range o.Items {
			said[it.Resource+" "+it.Namespace+"/"+it.Name] = string(it.Result) + " " + string(it.Action)
		}
	}
	for key, o := range outcomes {
		did[key] = string(o.Result) + " " + string(o.Action)
	}
	for key := range madeByControllers {
		delete(said, key)
		delete(did, key)
	}
	assert.Equal(t, did, said, "the dry run's outcomes are the restore's")
	out, stderr, code = dst.cli("restore", "create", "rel-r2", "--from-backup", "rel-1", "--namespace-mappings", "rel:rel-copy", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `serviceaccounts\s+0\s+1\s+0\s+0\s+0`, out, "after the restore, the ServiceAccount is there as backed up")
	assert.Regexp(t, `deployments.apps rel-copy/web\s+skipped\s+it already exists and differs`, out,
		"the running Deployment differs from the backup, and policy none would leave it")
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%s %v", r.Status.FailureReason, failedOutcomes(outcomes))
	kept := outcomes[objects.ClusterRolesResource+" /rel-config-editor"]
	assert.Equal(t, v1alpha1.ItemSkipped, kept.Result)
	assert.Contains(t, kept.Reason, "is never changed")
	assert.Equal(t, v1alpha1.ActionCreated, outcomes[objects.PriorityClassesResource+" /rel-critical"].Action)
	role, err := dc.RbacV1().ClusterRoles().Get(ctx, "rel-config-editor", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, role.Rules, 2, "the existing ClusterRole was not changed")

	waitPodsRunning(t, dst, "rel-copy", func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	claim, err := dc.CoreV1().PersistentVolumeClaims("rel-copy").Get(ctx, "data", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rel-fast", *claim.Spec.StorageClassName)
	binding, err := dc.RbacV1().ClusterRoleBindings().Get(ctx, "rel-node-reader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "app", Namespace: "rel-copy"}}, binding.Subjects)
	_, err = dc.SchedulingV1().PriorityClasses().Get(ctx, "other-critical", metav1.GetOptions{})
	assert.Error(t, err, "another namespace's class is not restored")

	for _, c := range []struct {
		kc        kubernetes.Interface
		namespace string
	}{{kc, "rel"}, {dc, "rel-copy"}} {
		user := "system:serviceaccount:" + c.namespace + ":app"
		assert.True(t, allowed(t, c.kc, user, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}), "%s lists nodes", user)
		assert.True(t, allowed(t, c.kc, user, authorizationv1.ResourceAttributes{Verb: "update", Resource: "configmaps", Namespace: c.namespace}),
			"%s edits its ConfigMaps", user)
	}
}

// watchWrites watches the cluster-scoped types a restore writes and the
// namespaced ones in namespace, and returns a function that stops and
// lists every change seen since (what the API server had delivered by
// then).
func watchWrites(t *testing.T, cfg *rest.Config, namespace string) func() []string {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var seen []string
	clusterWide := []schema.GroupVersionResource{
		{Version: "v1", Resource: "namespaces"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
		{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	}
	inNamespace := []schema.GroupVersionResource{
		{Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "persistentvolumeclaims"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
	for _, gvr := range append(clusterWide, inNamespace...) {
		var r dynamic.ResourceInterface = dc.Resource(gvr)
		if slices.Contains(inNamespace, gvr) {
			r = dc.Resource(gvr).Namespace(namespace)
		}
		list, err := r.List(ctx, metav1.ListOptions{Limit: 1})
		require.NoError(t, err)
		w, err := r.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		require.NoError(t, err)
		go func() {
			for ev := range w.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%s %s %s/%s", ev.Type, gvr.Resource, u.GetNamespace(), u.GetName()))
					mu.Unlock()
				}
			}
		}()
		t.Cleanup(w.Stop)
	}
	return func() []string {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// scratchKeys are the keys of a location under a dry run's scratch name.
func scratchKeys(t *testing.T, locationURL string) []string {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), locationURL)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), "")
	require.NoError(t, err)
	var scratch []string
	for _, k := range keys {
		if strings.Contains(k, v1alpha1.DryRunScratchPrefix) {
			scratch = append(scratch, k)
		}
	}
	return scratch
}

// makeWorkload makes namespace ns with service account app, a
// Deployment web running under it at PriorityClass ns-critical, claim
// data of StorageClass ns-fast (the sandbox's CSI driver), a
// ClusterRoleBinding ns-node-reader that lets app list nodes, and a
// RoleBinding that lets it edit ConfigMaps through ClusterRole
// ns-config-editor.
func makeWorkload(t *testing.T, kc kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	create := func(err error) { t.Helper(); require.NoError(t, err) }
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	create(err)
	_, err = kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	create(err)
	_, err = kc.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-critical"}, Value: 1000},
		metav1.CreateOptions{})
	create(err)
	_, err = kc.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-fast"},
		Provisioner: csistate.DriverName}, metav1.CreateOptions{})
	create(err)
	class := ns + "-fast"
	_, err = kc.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}},
		metav1.CreateOptions{})
	create(err)
	_, err = kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	create(err)
	app := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "app", Namespace: ns}}
	_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node-reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-node-reader"}, Subjects: app}, metav1.CreateOptions{})
	create(err)
	if ns == "rel" {
		_, err = kc.RbacV1().ClusterRoles().Create(ctx, configEditor(), metav1.CreateOptions{})
		create(err)
		_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "config-editor"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "rel-config-editor"}, Subjects: app}, metav1.CreateOptions{})
		create(err)
	}
	labels := map[string]string{"app": "web"}
	_, err = kc.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: "app", PriorityClassName: ns + "-critical", TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
					Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}}, metav1.CreateOptions{})
	create(err)
}

func configEditor() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rel-config-editor"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "update"}}}}
}

// allowed asks the cluster whether user may do what attrs say.
func allowed(t *testing.T, kc kubernetes.Interface, user string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	review, err := kc.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}
