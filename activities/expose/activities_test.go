package expose

import (
	"context"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
)

// TestExposeVolumeRestoreCreatesClaimAndPodInTheDataMoverNamespace: a
// restore's data mover gets an empty claim shaped by the input (class,
// access modes, size) in the worker's data mover namespace, not the
// volume's, and a read-write pod for the attempt; the result names them.
func TestExposeVolumeRestoreCreatesClaimAndPodInTheDataMoverNamespace(t *testing.T) {
	f := newFixture(t)
	in := restoreInput(f.url)
	res := f.expose(t, in)

	assert.Equal(t, dmNamespace+"/"+claimName(in), res.Claim)
	c, err := f.kube.CoreV1().PersistentVolumeClaims(dmNamespace).Get(context.Background(), claimName(in), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Spec.StorageClassName)
	assert.Equal(t, "fast", *c.Spec.StorageClassName)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, c.Spec.AccessModes)
	assert.True(t, resource.NewQuantity(5<<30, resource.BinarySI).Equal(c.Spec.Resources.Requests[corev1.ResourceStorage]))
	assert.Nil(t, c.Spec.DataSource, "a restore writes into an empty volume")
	_, err = f.kube.CoreV1().PersistentVolumeClaims("shop").Get(context.Background(), claimName(in), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing is created in the volume's own namespace: %v", err)

	pods := f.pods(t)
	require.Len(t, pods, 1)
	assert.Equal(t, "pod "+dmNamespace+"/"+pods[0].Name, res.DataMover)
	assert.Equal(t, claimName(in), pods[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.False(t, pods[0].Spec.Containers[0].VolumeMounts[0].ReadOnly, "a restore writes into its volume")
	assert.Contains(t, pods[0].Spec.Containers[0].Args, in.TaskQueue, "the data mover polls the operation's task queue")
}

// TestExposeVolumeKeepsTheAttemptsDataMover: exposing the same attempt
// again keeps its data mover; a new attempt gets a fresh one on the same
// claim.
func TestExposeVolumeKeepsTheAttemptsDataMover(t *testing.T) {
	f := newFixture(t)
	in := restoreInput(f.url)
	first := f.expose(t, in)
	again := f.expose(t, in)
	assert.Equal(t, first.DataMover, again.DataMover)
	assert.Len(t, f.pods(t), 1, "a retry of the same attempt starts no second data mover")

	in.Attempt = 2
	next := f.expose(t, in)
	assert.NotEqual(t, first.DataMover, next.DataMover)
	assert.Equal(t, first.Claim, next.Claim, "every attempt mounts the operation's one claim")
	assert.Len(t, f.pods(t), 2)
}

// snapshotFixture creates shop/snap, bound to a content with a handle.
func snapshotFixture(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	contentName, handle, claim := "snapcontent-1", "handle-of-snap", "data"
	_, err := f.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "csi.example", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "shop", Name: "snap"}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = f.snaps.SnapshotV1().VolumeSnapshots("shop").Create(ctx, &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "shop"},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim}},
		Status:     &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &contentName},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestExposeVolumeBackupReadsACloneOfTheBackupsSnapshot: in backup mode
// the claim is made from a Retain clone of the input's snapshot (found in
// the volume's namespace) and mounted read-only.
func TestExposeVolumeBackupReadsACloneOfTheBackupsSnapshot(t *testing.T) {
	f := newFixture(t)
	snapshotFixture(t, f)
	in := backupInput(f.url)
	f.expose(t, in)

	ctx := context.Background()
	clone, err := f.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, claimName(in), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "handle-of-snap", *clone.Spec.Source.SnapshotHandle, "the clone points at the backup snapshot's data")
	assert.Equal(t, snapv1.VolumeSnapshotContentRetain, clone.Spec.DeletionPolicy)
	c, err := f.kube.CoreV1().PersistentVolumeClaims(dmNamespace).Get(ctx, claimName(in), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.Spec.DataSource)
	assert.Equal(t, "VolumeSnapshot", c.Spec.DataSource.Kind)
	_, err = f.snaps.SnapshotV1().VolumeSnapshots(dmNamespace).Get(ctx, c.Spec.DataSource.Name, metav1.GetOptions{})
	assert.NoError(t, err, "the claim's data source is the clone in the data mover namespace")
	pods := f.pods(t)
	require.Len(t, pods, 1)
	assert.True(t, pods[0].Spec.Containers[0].VolumeMounts[0].ReadOnly, "a backup only reads its volume")
}

// TestExposeVolumeFailureIsRetryableAndNamesTheVolume: an exposer failure
// (here: the snapshot is not there yet) is retried and says which volume.
func TestExposeVolumeFailureIsRetryableAndNamesTheVolume(t *testing.T) {
	f := newFixture(t)
	_, err := f.env.ExecuteActivity(f.acts.ExposeVolume, backupInput(f.url))
	activitytest.RequireRetryable(t, err)
	assert.Contains(t, err.Error(), "shop/data")
	assert.Empty(t, f.pods(t), "no data mover starts without its volume")
}

// TestABadLocationFailsNonRetryableBeforeTouchingTheCluster: every
// activity that logs to the location fails with a non-retryable
// LocationUnavailable when the location cannot be opened, and leaves the
// cluster alone.
func TestABadLocationFailsNonRetryableBeforeTouchingTheCluster(t *testing.T) {
	f := newFixture(t)
	in := restoreInput("ftp://host/x")
	_, err := f.env.ExecuteActivity(f.acts.ExposeVolume, in)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	_, err = f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	_, err = f.env.ExecuteActivity(f.acts.HandOverVolume, in)
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	_, err = f.env.ExecuteActivity(f.acts.FinishVolumeRestores, v1alpha1.FinishVolumeRestoresInput{Restore: "r1",
		Location: "ftp://host/x", Bindings: []v1alpha1.ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1"}}})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeLocation)
	assert.Empty(t, f.kube.Actions(), "the cluster was not touched")
}

// TestExposeVolumeStoresItsLogWithItsOwner: the attempt's log goes to the
// backup's logs in backup mode and to the restore's in restore mode.
func TestExposeVolumeStoresItsLogWithItsOwner(t *testing.T) {
	f := newFixture(t)
	snapshotFixture(t, f)
	f.expose(t, backupInput(f.url))
	assert.NotEmpty(t, f.logKeys(t, location.Backup("b1").LogsPrefix()))

	f.expose(t, restoreInput(f.url))
	assert.NotEmpty(t, f.logKeys(t, location.Restore("r1").LogsPrefix()))
	assert.Empty(t, f.logKeys(t, location.Backup("r1").Prefix()), "a restore's log is not filed as a backup's")
}

// TestDiagnoseExposureDescribesTheAttemptsDataMover: the diagnosis is
// about the input's attempt: its pod's waiting reason and the claim.
func TestDiagnoseExposureDescribesTheAttemptsDataMover(t *testing.T) {
	f := newFixture(t)
	in := restoreInput(f.url)
	f.expose(t, in)
	in.Attempt = 2
	f.expose(t, in)
	ctx := context.Background()
	pod, err := f.kube.CoreV1().Pods(dmNamespace).Get(ctx, claimName(in)+"-2", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "datamover",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}
	_, err = f.kube.CoreV1().Pods(dmNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	val, err := f.env.ExecuteActivity(f.acts.DiagnoseExposure, in)
	require.NoError(t, err)
	var res v1alpha1.DiagnoseResult
	require.NoError(t, val.Get(&res))
	assert.Contains(t, res.Reason, pod.Name)
	assert.Contains(t, res.Reason, "ImagePullBackOff")
	assert.Contains(t, res.Reason, claimName(in), "the claim is not bound either")
}

// TestCleanupExposureDeletesWhatExposingCreated: the data mover pods, the
// claim and the snapshot clone go; the backup's own snapshot stays.
func TestCleanupExposureDeletesWhatExposingCreated(t *testing.T) {
	f := newFixture(t)
	snapshotFixture(t, f)
	in := backupInput(f.url)
	f.expose(t, in)
	in.Attempt = 2
	f.expose(t, in)

	_, err := f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	ctx := context.Background()
	assert.Empty(t, f.pods(t), "every attempt's data mover is stopped")
	_, err = f.kube.CoreV1().PersistentVolumeClaims(dmNamespace).Get(ctx, claimName(in), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "claim: %v", err)
	_, err = f.snaps.SnapshotV1().VolumeSnapshots(dmNamespace).Get(ctx, claimName(in), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "clone: %v", err)
	_, err = f.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, claimName(in), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "clone content: %v", err)
	_, err = f.snaps.SnapshotV1().VolumeSnapshots("shop").Get(ctx, "snap", metav1.GetOptions{})
	assert.NoError(t, err, "the backup's snapshot stays")
	_, err = f.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "snapcontent-1", metav1.GetOptions{})
	assert.NoError(t, err, "and so does its content")
}

// TestCleanupExposureOfARetainClassVolumeFinishes: the clone's volume
// takes the class's reclaim policy; one of a Retain class is set to Delete
// before its claim goes, so it is deleted and the cleanup ends instead of
// waiting for a Released volume forever. The test records the policy when
// the claim is deleted; should it still be Retain, it deletes the volume
// itself, so a broken cleanup ends too and the assertion reports it.
func TestCleanupExposureOfARetainClassVolumeFinishes(t *testing.T) {
	f := newFixture(t)
	f.emulateReclaim()
	snapshotFixture(t, f)
	in := backupInput(f.url)
	f.expose(t, in)
	f.bindDataMoverClaim(t, in, "pv-clone")
	pv := f.volume(t, "pv-clone")
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	_, err := f.kube.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{})
	require.NoError(t, err)

	pvGVR := corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	var atClaimDeletion corev1.PersistentVolumeReclaimPolicy
	f.kube.PrependReactor("delete", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		if obj, err := f.kube.Tracker().Get(pvGVR, "", "pv-clone"); err == nil {
			atClaimDeletion = obj.(*corev1.PersistentVolume).Spec.PersistentVolumeReclaimPolicy
			if atClaimDeletion != corev1.PersistentVolumeReclaimDelete {
				_ = f.kube.Tracker().Delete(pvGVR, "", "pv-clone")
			}
		}
		return false, nil, nil
	})

	_, err = f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, atClaimDeletion, "the volume is set to Delete before its claim goes")
	_, err = f.kube.CoreV1().PersistentVolumes().Get(context.Background(), "pv-clone", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the clone's volume is deleted: %v", err)
}

// TestCleanupExposureOfNothingIsNoError: a retried cleanup, or one of an
// exposure that never happened, succeeds.
func TestCleanupExposureOfNothingIsNoError(t *testing.T) {
	f := newFixture(t)
	in := backupInput(f.url)
	_, err := f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	in.Mode = v1alpha1.ExposeRestore
	_, err = f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
}

// TestCleanupExposureHeartbeatsWhileDataMoversStop: what the cleanup
// waits for reaches Temporal as a heartbeat.
func TestCleanupExposureHeartbeatsWhileDataMoversStop(t *testing.T) {
	f := newFixture(t)
	in := restoreInput(f.url)
	f.expose(t, in)
	f.podsLinger = 3

	_, err := f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	assert.Empty(t, f.pods(t))
	beats := beats[string](t, f)
	require.NotEmpty(t, beats, "the wait for the pods heartbeats")
	assert.Contains(t, beats[0], claimName(in), "the heartbeat says what it waits for")
}

// volumeOnNode is a bound claim shop/data whose volume, when node is set,
// is pinned to it.
func volumeOnNode(node string) []runtime.Object {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-shop-data"}}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name}}
	return []runtime.Object{pv, claim}
}

func (f *fixture) place(t *testing.T, in v1alpha1.ExposeInput) *v1alpha1.Placement {
	t.Helper()
	val, err := f.env.ExecuteActivity(f.acts.PlaceDataMover, in)
	require.NoError(t, err)
	var p v1alpha1.Placement
	require.NoError(t, val.Get(&p))
	return &p
}

// TestPlaceDataMoverTakesThePinnedNodesSlots: a backup of a volume pinned
// to a node queues for that node's slots, with that node's limit.
func TestPlaceDataMoverTakesThePinnedNodesSlots(t *testing.T) {
	f := newFixture(t, volumeOnNode("node-a")...)
	f.acts.Concurrency = Concurrency{Default: 2, ByNode: map[string]int{"node-a": 5}}
	assert.Equal(t, v1alpha1.Placement{Node: "node-a", Limit: 5}, *f.place(t, backupInput(f.url)))
}

// TestPlaceDataMoverOfAnUnpinnedVolumeTakesAnyNodesSlots: a volume no
// node pins, and every restore, share the "any-node" slots with the
// default limit.
func TestPlaceDataMoverOfAnUnpinnedVolumeTakesAnyNodesSlots(t *testing.T) {
	f := newFixture(t, volumeOnNode("")...)
	f.acts.Concurrency = Concurrency{Default: 3, ByNode: map[string]int{"node-a": 5}}
	assert.Equal(t, v1alpha1.Placement{Node: anyNode, Limit: 3}, *f.place(t, backupInput(f.url)))
	assert.Equal(t, v1alpha1.Placement{Node: anyNode, Limit: 3}, *f.place(t, restoreInput(f.url)))
}

// TestPlaceDataMoverFailureIsRetryableAndNamesTheVolume: when the cluster
// cannot say where the volume is, the placement is retried.
func TestPlaceDataMoverFailureIsRetryableAndNamesTheVolume(t *testing.T) {
	f := newFixture(t)
	f.kube.PrependReactor("get", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	_, err := f.env.ExecuteActivity(f.acts.PlaceDataMover, backupInput(f.url))
	activitytest.RequireRetryable(t, err)
	assert.Contains(t, err.Error(), "shop/data")
}

// TestConcurrencyFor: a node's positive override wins; otherwise the
// default, and never less than one data mover.
func TestConcurrencyFor(t *testing.T) {
	c := Concurrency{Default: 2, ByNode: map[string]int{"big": 8, "zero": 0}}
	assert.Equal(t, 8, c.For("big"))
	assert.Equal(t, 2, c.For("zero"), "a zero override does not stop the node")
	assert.Equal(t, 2, c.For("other"))
	assert.Equal(t, 1, Concurrency{}.For("other"), "an unset default still runs one data mover")
	assert.Equal(t, 1, Concurrency{Default: -3}.For("other"))
}

// fakeTemporal records SignalWithStartWorkflow calls and answers
// DescribeWorkflowExecution from statuses (an error from errs).
type fakeTemporal struct {
	signalErr error
	signals   []signalCall
	statuses  map[string]enumspb.WorkflowExecutionStatus
	errs      map[string]error
}

type signalCall struct {
	workflowID, signal string
	arg                any
	options            client.StartWorkflowOptions
	workflow           any
	args               []any
}

func (f *fakeTemporal) SignalWithStartWorkflow(_ context.Context, workflowID, signalName string, signalArg any,
	options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error) {
	f.signals = append(f.signals, signalCall{workflowID, signalName, signalArg, options, workflow, workflowArgs})
	return nil, f.signalErr
}

func (f *fakeTemporal) DescribeWorkflowExecution(_ context.Context, workflowID, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if err := f.errs[workflowID]; err != nil {
		return nil, err
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: f.statuses[workflowID]}}, nil
}

// TestRequestDataMoverSlotSignalsTheNodesSlotsWorkflow: the request is
// signalled to the node's slots workflow, which is started on cairn's
// task queue with the node and its limit if it does not run.
func TestRequestDataMoverSlotSignalsTheNodesSlotsWorkflow(t *testing.T) {
	f := newFixture(t)
	tc := &fakeTemporal{}
	f.acts.Temporal = tc
	req := v1alpha1.SlotRequest{WorkflowID: "backup/b1/volume/shop/data", Operation: "op-1", Limit: 4}
	_, err := f.env.ExecuteActivity(f.acts.RequestDataMoverSlot, v1alpha1.SlotAsk{Node: "node-a", Request: req})
	require.NoError(t, err)

	require.Len(t, tc.signals, 1)
	s := tc.signals[0]
	assert.Equal(t, v1alpha1.DataMoverSlotsWorkflowID("node-a"), s.workflowID)
	assert.Equal(t, v1alpha1.SignalAcquireSlot, s.signal)
	assert.Equal(t, req, s.arg)
	assert.Equal(t, s.workflowID, s.options.ID, "the started workflow is the one signalled")
	assert.Equal(t, v1alpha1.TaskQueue, s.options.TaskQueue)
	assert.Equal(t, v1alpha1.DataMoverSlotsWorkflowName, s.workflow)
	assert.Equal(t, []any{v1alpha1.SlotsState{Node: "node-a", Limit: 4}}, s.args)
}

// TestRequestDataMoverSlotFailureIsRetryable: a Temporal error fails the
// request so it is retried, naming the node.
func TestRequestDataMoverSlotFailureIsRetryable(t *testing.T) {
	f := newFixture(t)
	f.acts.Temporal = &fakeTemporal{signalErr: serviceerror.NewUnavailable("frontend restarting")}
	_, err := f.env.ExecuteActivity(f.acts.RequestDataMoverSlot, v1alpha1.SlotAsk{Node: "node-a",
		Request: v1alpha1.SlotRequest{WorkflowID: "w"}})
	activitytest.RequireRetryable(t, err)
	assert.Contains(t, err.Error(), "node-a")
}

func (f *fixture) closedHolders(holders ...string) ([]string, error) {
	var reqs []v1alpha1.SlotRequest
	for _, h := range holders {
		reqs = append(reqs, v1alpha1.SlotRequest{WorkflowID: h})
	}
	val, err := f.env.ExecuteActivity(f.acts.ClosedSlotHolders, reqs)
	if err != nil {
		return nil, err
	}
	var closed []string
	err = val.Get(&closed)
	return closed, err
}

// TestClosedSlotHoldersListsHoldersNoLongerRunning: a holder whose
// workflow ended in any way, or is gone, is closed; a running one is not.
func TestClosedSlotHoldersListsHoldersNoLongerRunning(t *testing.T) {
	f := newFixture(t)
	f.acts.Temporal = &fakeTemporal{
		statuses: map[string]enumspb.WorkflowExecutionStatus{
			"running":    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			"terminated": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			"timed-out":  enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
			"completed":  enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		},
		errs: map[string]error{"gone": serviceerror.NewNotFound("workflow not found")},
	}
	closed, err := f.closedHolders("running", "terminated", "gone", "timed-out", "completed")
	require.NoError(t, err)
	assert.Equal(t, []string{"terminated", "gone", "timed-out", "completed"}, closed)
}

// TestClosedSlotHoldersFailsWhenAHolderCannotBeDescribed: a holder whose
// state is unknown is not declared closed (its slot would be handed out
// twice); the activity fails and is retried.
func TestClosedSlotHoldersFailsWhenAHolderCannotBeDescribed(t *testing.T) {
	f := newFixture(t)
	f.acts.Temporal = &fakeTemporal{
		statuses: map[string]enumspb.WorkflowExecutionStatus{"terminated": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED},
		errs:     map[string]error{"unknown": serviceerror.NewUnavailable("frontend restarting")},
	}
	closed, err := f.closedHolders("terminated", "unknown")
	activitytest.RequireRetryable(t, err)
	assert.Contains(t, err.Error(), "unknown")
	assert.Nil(t, closed)
}

// TestPodVolumeDirStaysInThePodsVolumes: a pod volume's directory is
// below its pod's volumes directory, whatever the record crossing the
// process boundary says.
func TestPodVolumeDirStaysInThePodsVolumes(t *testing.T) {
	const pods = "/var/lib/kubelet/pods"
	dir := func(uid, d string) string { return podVolumeDir(pods, &v1alpha1.PodVolume{UID: uid, Dir: d}) }
	assert.Equal(t, pods+"/u1/volumes/kubernetes.io~empty-dir/cache", dir("u1", "volumes/kubernetes.io~empty-dir/cache"))
	for _, bad := range [][2]string{
		{"u1", "volumes/../../../etc"}, {"u1", "../u2/volumes/x"}, {"../..", "volumes/x"}, {"u1/../u2", "volumes/x"},
		{"", "volumes/x"}, {"u1", "etc"},
	} {
		assert.Empty(t, dir(bad[0], bad[1]), "uid %q dir %q", bad[0], bad[1])
	}
}
