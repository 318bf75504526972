package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// fakeRuns records what the controller asks of the starter; each run it
// waits on closes when the test closes it.
type fakeRuns struct {
	mu        sync.Mutex
	created   []starter.CreateBackupRequest
	actingAs  []*v1alpha1.Identity // of each created
	servesNS  []string             // the namespace each created serves
	listed    []*starter.BackupView
	deleted   []string
	createErr error
	phase     v1alpha1.Phase
	closing   map[string]chan error // by workflow ID
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{phase: v1alpha1.PhaseInProgress, closing: map[string]chan error{}}
}

func (f *fakeRuns) CreateBackup(ctx context.Context, req starter.CreateBackupRequest) (*starter.CreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, req)
	f.actingAs = append(f.actingAs, starter.ActingAs(ctx))
	f.servesNS = append(f.servesNS, starter.NamespaceOf(ctx))
	if f.createErr != nil {
		return nil, f.createErr
	}
	return &starter.CreateResult{Name: req.Name, WorkflowID: v1alpha1.BackupWorkflowID(req.Name), RunID: "r1", Created: true}, nil
}

func (f *fakeRuns) GetBackup(_ context.Context, name string) (*starter.BackupView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &starter.BackupView{Name: name, Phase: f.phase,
		Status: &v1alpha1.BackupStatus{Phase: f.phase, ItemsDone: 42, Warnings: 1}}, nil
}

func (f *fakeRuns) ListBackups(context.Context) (*starter.BackupList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &starter.BackupList{Items: f.listed}, nil
}

func (f *fakeRuns) DeleteBackup(_ context.Context, name string, _ bool) (*starter.CreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return &starter.CreateResult{Name: name, WorkflowID: v1alpha1.DeleteWorkflowID(name), RunID: "d1", Created: true}, nil
}

func (f *fakeRuns) CreateRestore(context.Context, starter.CreateRestoreRequest) (*starter.CreateResult, error) {
	panic("not in these tests")
}

func (f *fakeRuns) GetRestore(context.Context, string) (*starter.RestoreView, error) {
	panic("not in these tests")
}

func (f *fakeRuns) CreateSchedule(context.Context, v1alpha1.ScheduleSpec) (*starter.CreateResult, error) {
	panic("not in these tests")
}

func (f *fakeRuns) GetSchedule(context.Context, string) (*starter.ScheduleView, error) {
	panic("not in these tests")
}

func (f *fakeRuns) UpdateSchedule(context.Context, string, v1alpha1.ScheduleSpec) (*starter.ScheduleView, error) {
	panic("not in these tests")
}

func (f *fakeRuns) PauseSchedule(context.Context, string, string) (*starter.ScheduleView, error) {
	panic("not in these tests")
}

func (f *fakeRuns) UnpauseSchedule(context.Context, string, string) (*starter.ScheduleView, error) {
	panic("not in these tests")
}

func (f *fakeRuns) DeleteSchedule(context.Context, string) (*starter.ScheduleDeleted, error) {
	panic("not in these tests")
}

func (f *fakeRuns) WaitRun(ctx context.Context, workflowID, _ string) error {
	select {
	case err := <-f.closer(workflowID):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeRuns) closer(workflowID string) chan error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing[workflowID] == nil {
		f.closing[workflowID] = make(chan error, 1)
	}
	return f.closing[workflowID]
}

// closeRun ends the run and waits until the waiter asked for the
// resource's reconcile.
func closeRun(f *fakeRuns, w *runWaiter, workflowID string, phase v1alpha1.Phase) {
	f.mu.Lock()
	f.phase = phase
	f.mu.Unlock()
	f.closer(workflowID) <- nil
	<-w.events // a waiter that never reports hangs the test until go test's timeout
}

const cairnNS = "cairn"

func newBackupReconciler(t *testing.T, objs ...client.Object) (*backupReconciler, *fakeRuns, client.Client) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, admissionregistrationv1.AddToScheme(scheme))
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Backup{}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	runs := newFakeRuns()
	log := zaptest.NewLogger(t)
	return &backupReconciler{runFollower: runFollower{kube: kube, waiter: newRunWaiter(ctx, runs.WaitRun, log), tenancy: tenancy{namespace: cairnNS, reader: kube},
		log: log, now: time.Now}, runs: runs}, runs, kube
}

func reconcileBackup(t *testing.T, r *backupReconciler, ns, name string) *v1alpha1.Backup {
	t.Helper()
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
	require.NoError(t, err)
	b := &v1alpha1.Backup{}
	if err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); apierrors.IsNotFound(err) {
		return nil
	} else {
		require.NoError(t, err)
	}
	return b
}

func TestBackupResourceRunsOnceAndTakesItsRunsOutcome(t *testing.T) {
	r, runs, _ := newBackupReconciler(t, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: cairnNS},
		Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"shop"}}})

	b := reconcileBackup(t, r, cairnNS, "nightly")
	require.Len(t, runs.created, 1)
	assert.Equal(t, "nightly", runs.created[0].Name, "the resource's name names the backup")
	assert.Equal(t, []string{"shop"}, runs.created[0].IncludedNamespaces)
	assert.Equal(t, v1alpha1.PhaseInProgress, b.Status.Phase)
	assert.Equal(t, "backup/nightly", b.Status.WorkflowID)
	assert.Equal(t, v1alpha1.ActingAsWorker, b.Status.ActingAs)
	assert.Nil(t, runs.actingAs[0], "a resource in cairn's namespace acts as the worker")
	assert.Contains(t, b.Finalizers, v1alpha1.FinalizerDeleteData)

	b = reconcileBackup(t, r, cairnNS, "nightly")
	assert.Len(t, runs.created, 1, "a reconcile while the run works starts nothing")
	assert.Equal(t, v1alpha1.PhaseInProgress, b.Status.Phase)

	closeRun(runs, r.waiter, "backup/nightly", v1alpha1.PhasePartiallyFailed)
	b = reconcileBackup(t, r, cairnNS, "nightly")
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, b.Status.Phase)
	assert.Equal(t, 42, b.Status.Items)
	assert.Equal(t, 1, b.Status.Warnings)
	reconcileBackup(t, r, cairnNS, "nightly")
	assert.Len(t, runs.created, 1, "an ended run is not started again")
}

func TestBackupResourceTheStarterRefusesFails(t *testing.T) {
	r, runs, _ := newBackupReconciler(t, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: cairnNS}})
	runs.createErr = &starter.InvalidError{Problems: []string{"includedResources: no such type widgets"}}
	b := reconcileBackup(t, r, cairnNS, "bad")
	assert.Equal(t, v1alpha1.PhaseFailed, b.Status.Phase)
	assert.Contains(t, b.Status.Message, "no such type widgets")
	reconcileBackup(t, r, cairnNS, "bad")
	assert.Len(t, runs.created, 1, "a refused spec is not retried")
}

func TestDeletedBackupResourceDeletesItsDataOnce(t *testing.T) {
	r, runs, kube := newBackupReconciler(t, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: cairnNS}})
	b := reconcileBackup(t, r, cairnNS, "old")
	closeRun(runs, r.waiter, "backup/old", v1alpha1.PhaseCompleted)
	reconcileBackup(t, r, cairnNS, "old")

	require.NoError(t, kube.Delete(context.Background(), b))
	b = reconcileBackup(t, r, cairnNS, "old")
	require.NotNil(t, b, "held by the finalizer while its data is deleted")
	assert.Equal(t, []string{"old"}, runs.deleted)
	assert.Equal(t, "d1", b.Annotations[v1alpha1.AnnotationDeletionRun])
	reconcileBackup(t, r, cairnNS, "old")
	assert.Len(t, runs.deleted, 1, "a reconcile during the deletion waits for it")

	closeRun(runs, r.waiter, "delete/old", v1alpha1.PhaseCompleted)
	assert.Nil(t, reconcileBackup(t, r, cairnNS, "old"), "released once its data is deleted")
	assert.Len(t, runs.deleted, 1)
}

func TestDeletedBackupResourceKeepsDataWhenAnnotated(t *testing.T) {
	r, runs, kube := newBackupReconciler(t, &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: cairnNS,
		Annotations: map[string]string{v1alpha1.AnnotationKeepData: "true"}}})
	b := reconcileBackup(t, r, cairnNS, "kept")
	require.NoError(t, kube.Delete(context.Background(), b))
	assert.Nil(t, reconcileBackup(t, r, cairnNS, "kept"))
	assert.Empty(t, runs.deleted)
}
