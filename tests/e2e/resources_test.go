package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/controller"
	"github.com/cairn-backup/cairn/starter"
)

// TestBackupAndRestoreResourcesRunAndReportStatus drives cairn through its
// Kubernetes resources on a real API server: a Backup created while the
// controller is down runs once it is up, a Restore of it writes into a
// mapped namespace, a Schedule drives its Temporal Schedule, bad specs
// are refused by the CRD's schema with the field named, a resource outside
// cairn's namespace is refused when no webhook records its creator, and
// deleting a Backup deletes its data, and a schedule's runs and the
// API's backups show up as Backups; then checkTenancy, with the webhook.
// It is the only test that runs a controller on the shared cluster.
func TestBackupAndRestoreResourcesRunAndReportStatus(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	w := s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cc, err := client.NewWithWatch(s.cluster.Config(), client.Options{Scheme: scheme})
	require.NoError(t, err)

	const ops, app, copyNS = "crd-ops", "crd-app", "crd-app-copy"
	for _, ns := range []string{ops, app} {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = kc.CoreV1().ConfigMaps(app).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"mode": "blue"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Bad input: the CRD's schema names the field.
	bad := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ops},
		Spec: v1alpha1.BackupSpec{ClusterResources: "sometimes"}}
	err = cc.Create(ctx, bad)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.clusterResources")
	other := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "named", Namespace: ops}, Spec: v1alpha1.BackupSpec{Name: "another"}}
	err = cc.Create(ctx, other)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.name, when set, must be the resource's name")

	// Created as kubectl would (a TTL as written, no spec.name) while no
	// controller runs, with a Restore of it applied at the same time:
	// nothing happens until a controller runs, then the Restore waits for
	// its Backup to end.
	backup := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "crd-app-1", Namespace: ops}}
	manifest := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cairn.io/v1alpha1", "kind": "Backup",
		"metadata": map[string]any{"name": backup.Name, "namespace": ops},
		"spec":     map[string]any{"includedNamespaces": []any{app}, "ttl": "72h"},
	}}
	require.NoError(t, cc.Create(ctx, manifest))
	restore := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "crd-app-copy", Namespace: ops},
		Spec: v1alpha1.RestoreSpec{BackupName: backup.Name, NamespaceMapping: map[string]string{app: copyNS}}}
	require.NoError(t, cc.Create(ctx, restore))
	stop := runControllerWith(t, s, controller.Options{Namespace: ops, MirrorInterval: 5 * time.Second})
	done := waitResourceDone(t, cc, &v1alpha1.BackupList{}, ops, backup.Name)
	b := done.(*v1alpha1.Backup)
	require.Equal(t, v1alpha1.PhaseCompleted, b.Status.Phase, "%+v", b.Status)
	assert.Equal(t, v1alpha1.BackupWorkflowID(backup.Name), b.Status.WorkflowID)
	assert.Equal(t, v1alpha1.ActingAsWorker, b.Status.ActingAs, "cairn's own namespace acts as the worker")
	assert.Positive(t, b.Status.Items)
	assert.NotNil(t, b.Status.CompletionTime)
	assert.Contains(t, b.Finalizers, v1alpha1.FinalizerDeleteData)
	require.NotNil(t, b.Spec.TTL)
	assert.Equal(t, 72*time.Hour, b.Spec.TTL.Duration)
	v, err := s.starter.GetBackup(ctx, backup.Name)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "the resource's backup is the backup of its name")

	// A worker SIGKILL in the middle of a resource's run: the run resumes
	// and the status ends right, with the same items.
	var killed string
	catchInNewRun(t, s, w, finalizeBackupActivity, func(try int) string {
		killed = fmt.Sprintf("crd-kill-%d", try)
		require.NoError(t, cc.Create(ctx, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: killed, Namespace: ops},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{app}}}))
		return v1alpha1.BackupWorkflowID(killed)
	})
	w.kill()
	w = s.startWorker()
	k := waitResourceDone(t, cc, &v1alpha1.BackupList{}, ops, killed).(*v1alpha1.Backup)
	require.Equal(t, v1alpha1.PhaseCompleted, k.Status.Phase, "%+v", k.Status)
	assert.Greater(t, activityAttempt(t, s, k.Status.WorkflowID, finalizeBackupActivity), int32(1),
		"the kill landed mid-step: FinalizeBackup ran again")
	assert.Equal(t, b.Status.Items, k.Status.Items, "nothing lost or duplicated")

	// A spec cannot change once created.
	b.Spec.IncludedNamespaces = []string{"kube-system"}
	err = cc.Update(ctx, b)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "cannot change once created")

	// Outside cairn's namespace a resource acts as its creator; this
	// controller trusts no webhook to record one, so it is refused and
	// starts nothing.
	foreign := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "crd-foreign", Namespace: app},
		Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{app}}}
	require.NoError(t, cc.Create(ctx, foreign))
	f := waitResourceDone(t, cc, &v1alpha1.BackupList{}, app, foreign.Name).(*v1alpha1.Backup)
	assert.Equal(t, v1alpha1.PhaseFailed, f.Status.Phase)
	assert.Contains(t, f.Status.Message, "runs none")
	_, err = s.starter.GetBackup(ctx, foreign.Name)
	assert.ErrorIs(t, err, starter.ErrNotFound, "a refused resource starts no backup")

	// The Restore, into another namespace, ran once its Backup ended.
	r := waitResourceDone(t, cc, &v1alpha1.RestoreList{}, ops, restore.Name).(*v1alpha1.Restore)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Status.Phase, "%+v", r.Status)
	assert.Positive(t, r.Status.Items)
	cm, err := kc.CoreV1().ConfigMaps(copyNS).Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "blue", cm.Data["mode"])

	// A Schedule is kept in step with its Temporal Schedule: created,
	// paused through its spec, deleted with it.
	noRetention := &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "crd-no-retention", Namespace: ops},
		Spec: v1alpha1.ScheduleSpec{Cron: "0 2 * * *"}}
	require.NoError(t, cc.Create(ctx, noRetention))
	refusedSchedule := watchResource(t, cc, &v1alpha1.ScheduleList{}, ops, noRetention.Name, func(ev watch.Event) bool {
		sc, ok := ev.Object.(*v1alpha1.Schedule)
		return ok && sc.Status.Message != ""
	}).(*v1alpha1.Schedule)
	assert.Contains(t, refusedSchedule.Status.Message, "retention", "the starter's check names the field")
	assert.Empty(t, refusedSchedule.Status.ScheduleID)
	require.NoError(t, cc.Delete(ctx, refusedSchedule))

	keep := 3
	sched := &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "crd-nightly", Namespace: ops},
		Spec: v1alpha1.ScheduleSpec{Cron: "0 2 * * *", Template: v1alpha1.BackupSpec{IncludedNamespaces: []string{app}},
			Retention: v1alpha1.RetentionPolicy{KeepLast: &keep}}}
	require.NoError(t, cc.Create(ctx, sched))
	// Temporal may compute a new schedule's due times after the create
	// returns: the status has its next run once it has them.
	sc := watchResource(t, cc, &v1alpha1.ScheduleList{}, ops, sched.Name, func(ev watch.Event) bool {
		return scheduleObserved(ev) && ev.Object.(*v1alpha1.Schedule).Status.NextRun != nil
	}).(*v1alpha1.Schedule)
	assert.Equal(t, v1alpha1.ScheduleID(sched.Name), sc.Status.ScheduleID, "%+v", sc.Status)
	assert.False(t, sc.Status.Paused)
	assert.Equal(t, 2, sc.Status.NextRun.UTC().Hour())
	tv, err := s.starter.GetSchedule(ctx, sched.Name)
	require.NoError(t, err)
	assert.Equal(t, []string{app}, tv.Spec.Template.IncludedNamespaces)
	assert.False(t, tv.Paused)

	// The schedule's runs, and backups started through the API, show up
	// as Backups too.
	_, err = s.starter.TriggerSchedule(ctx, sched.Name)
	require.NoError(t, err)
	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "crd-api-1",
		IncludedNamespaces: []string{app}}})
	require.NoError(t, err)
	scheduled := watchResource(t, cc, &v1alpha1.BackupList{}, ops, "", func(ev watch.Event) bool {
		b, ok := ev.Object.(*v1alpha1.Backup)
		return ok && strings.HasPrefix(b.Name, sched.Name+"-") && b.Status.Phase.Done()
	}).(*v1alpha1.Backup)
	assert.Equal(t, v1alpha1.PhaseCompleted, scheduled.Status.Phase, "%+v", scheduled.Status)
	assert.Equal(t, starter.SourceTemporal, scheduled.Annotations[v1alpha1.AnnotationMirrored])
	assert.Positive(t, scheduled.Status.Items)
	fromAPI := waitResourceDone(t, cc, &v1alpha1.BackupList{}, ops, "crd-api-1").(*v1alpha1.Backup)
	assert.Equal(t, v1alpha1.PhaseCompleted, fromAPI.Status.Phase, "%+v", fromAPI.Status)
	assert.Equal(t, []string{app}, fromAPI.Spec.IncludedNamespaces)

	// Paused as `kubectl patch` would: the controller may write the
	// status in the meantime (a run's outcome), so an update of the copy
	// watched earlier would meet a conflict.
	unpaused := sc.DeepCopy()
	sc.Spec.Paused = true
	require.NoError(t, cc.Patch(ctx, sc, client.MergeFrom(unpaused)))
	sc = watchResource(t, cc, &v1alpha1.ScheduleList{}, ops, sched.Name, scheduleObserved).(*v1alpha1.Schedule)
	assert.True(t, sc.Status.Paused)
	assert.Nil(t, sc.Status.NextRun, "a paused schedule has no next run")
	tv, err = s.starter.GetSchedule(ctx, sched.Name)
	require.NoError(t, err)
	assert.True(t, tv.Paused, "pausing the resource pauses the Temporal Schedule")

	require.NoError(t, cc.Delete(ctx, sc))
	waitResourceGone(t, cc, &v1alpha1.ScheduleList{}, ops, sched.Name)
	_, err = s.starter.GetSchedule(ctx, sched.Name)
	assert.ErrorIs(t, err, starter.ErrNotFound, "deleting the resource deletes the Temporal Schedule")

	// Deleting the Backup deletes its data, then releases the resource.
	require.NoError(t, cc.Delete(ctx, b))
	waitResourceGone(t, cc, &v1alpha1.BackupList{}, ops, backup.Name)
	v, err = s.starter.GetBackup(ctx, backup.Name)
	if err == nil {
		assert.Equal(t, v1alpha1.PhaseDeleted, v.Phase, "the backup's data is gone")
	} else {
		assert.ErrorIs(t, err, starter.ErrNotFound)
	}
	stop()

	checkControllerKill(t, s, w, cc, ops, app)
	checkTenancy(t, s, kc, cc, ops)
}

// checkControllerKill: the controller (a `cairn api` process) is killed
// by SIGKILL while a resource's run is in progress, held there by having
// no worker. A resource created while it is down, and the one it was
// following, both end right once it and a worker are back.
func checkControllerKill(t *testing.T, s *stack, w *proc, cc client.WithWatch, ops, app string) {
	ctx := context.Background()
	w.kill() // no worker: runs stay in progress however long this takes
	api := startAPIController(t, s, ops)
	held := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "crd-held", Namespace: ops},
		Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{app}}}
	require.NoError(t, cc.Create(ctx, held))
	watchResource(t, cc, &v1alpha1.BackupList{}, ops, held.Name, func(ev watch.Event) bool {
		b, ok := ev.Object.(*v1alpha1.Backup)
		return ok && b.Status.Phase == v1alpha1.PhaseInProgress
	})
	v, err := s.starter.GetBackup(ctx, held.Name)
	require.NoError(t, err)
	require.False(t, v.Phase.Done(), "the run is in progress when its controller dies")
	api.kill()

	late := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "crd-late", Namespace: ops},
		Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{app}}}
	require.NoError(t, cc.Create(ctx, late))
	s.startWorker()
	api = startAPIController(t, s, ops)
	var items []int
	for _, name := range []string{held.Name, late.Name} {
		b := waitResourceDone(t, cc, &v1alpha1.BackupList{}, ops, name).(*v1alpha1.Backup)
		require.Equal(t, v1alpha1.PhaseCompleted, b.Status.Phase, "%s: %+v", name, b.Status)
		items = append(items, b.Status.Items)
	}
	assert.Positive(t, items[0])
	assert.Equal(t, items[0], items[1], "the same namespace, nothing lost or duplicated by the kill")
	api.stop()
}

// startAPIController starts `cairn api` against s, whose controller runs
// resources with ns as cairn's namespace.
func startAPIController(t *testing.T, s *stack, ns string) *proc {
	return startProc(t, "api", "api", "--listen", freePort(t), "--temporal-address", s.temporalAddr,
		"--kubeconfig", s.cluster.KubeconfigPath(), "--location", s.location, "--controller-namespace", ns)
}

// runControllerWith runs the controller with opts.
func runControllerWith(t *testing.T, s *stack, opts controller.Options) func() {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	opts.Log = zaptest.NewLogger(t)
	go func() { errc <- controller.Run(ctx, s.cluster.Config(), s.starter, opts) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitResourceDone watches the resource until its status says its run is
// over (or that it was refused), and returns it.
func waitResourceDone(t *testing.T, cc client.WithWatch, list client.ObjectList, ns, name string) client.Object {
	t.Helper()
	return watchResource(t, cc, list, ns, name, func(ev watch.Event) bool {
		switch o := ev.Object.(type) {
		case *v1alpha1.Backup:
			return o.Status.Phase.Done()
		case *v1alpha1.Restore:
			return o.Status.Phase.Done()
		}
		return false
	})
}

// scheduleObserved is a Schedule event whose status is of its spec.
func scheduleObserved(ev watch.Event) bool {
	sc, ok := ev.Object.(*v1alpha1.Schedule)
	return ok && sc.Status.ScheduleID != "" && sc.Status.ObservedGeneration == sc.Generation
}

// waitResourceGone watches the resource until it is deleted.
func waitResourceGone(t *testing.T, cc client.WithWatch, list client.ObjectList, ns, name string) {
	t.Helper()
	watchResource(t, cc, list, ns, name, func(ev watch.Event) bool { return ev.Type == watch.Deleted })
}

// watchResource watches the resource of that name (any of ns when name is
// empty) until cond holds, and returns it.
func watchResource(t *testing.T, cc client.WithWatch, list client.ObjectList, ns, name string, cond func(watch.Event) bool) client.Object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound for a hang, not a verdict
	defer cancel()
	opts := []client.ListOption{client.InNamespace(ns)}
	if name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": name})
	}
	w, err := cc.Watch(ctx, list, opts...)
	require.NoError(t, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch %s/%s: %v", ns, name, ev.Object)
		}
		if cond(ev) {
			return ev.Object.(client.Object)
		}
	}
	t.Fatalf("%s/%s: no such event before the watch ended: %v", ns, name, ctx.Err())
	return nil
}
