package expose

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
)

// exposedRestore exposes a restore of shop/data and has its data mover
// claim bound to volume pv-1.
func exposedRestore(t *testing.T, f *fixture) v1alpha1.ExposeInput {
	t.Helper()
	in := restoreInput(f.url)
	f.expose(t, in)
	f.bindDataMoverClaim(t, in, "pv-1")
	return in
}

// bindTargetClaim plays the restore and the volume controller: the
// target claim shop/data is created for pv and bound to it.
func (f *fixture) bindTargetClaim(t *testing.T, pv string) {
	t.Helper()
	ctx := context.Background()
	_, err := f.kube.CoreV1().PersistentVolumeClaims("shop").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop", UID: "target-uid"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	vol := f.volume(t, pv)
	vol.Spec.ClaimRef.UID = "target-uid"
	vol.Status.Phase = corev1.VolumeBound
	_, err = f.kube.CoreV1().PersistentVolumes().Update(ctx, vol, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// failClaimDeletes makes the next n deletions of a claim fail.
func (f *fixture) failClaimDeletes(n int32) {
	var left atomic.Int32
	left.Store(n)
	f.kube.PrependReactor("delete", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		if left.Add(-1) >= 0 {
			return true, nil, apierrors.NewServiceUnavailable("API server overloaded")
		}
		return false, nil, nil
	})
}

func (f *fixture) volumePatches() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "persistentvolumes" {
			n++
		}
	}
	return n
}

// TestHandOverVolumeGivesTheRestoredVolumeToTheTargetClaim: the data
// movers stop, the temporary claim goes, and the volume is kept (Retain,
// its own policy remembered) and pre-bound to the volume's claim without a
// UID, carrying the restore's label.
func TestHandOverVolumeGivesTheRestoredVolumeToTheTargetClaim(t *testing.T) {
	f := newFixture(t)
	in := exposedRestore(t, f)

	pv, err := f.handOver(in)
	require.NoError(t, err)
	assert.Equal(t, "pv-1", pv)
	assert.Empty(t, f.pods(t), "the data movers stopped before their claim went")
	_, err = f.kube.CoreV1().PersistentVolumeClaims(dmNamespace).Get(context.Background(), claimName(in), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the temporary claim is gone: %v", err)

	vol := f.volume(t, pv)
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, vol.Spec.PersistentVolumeReclaimPolicy, "kept until its claim binds")
	assert.Equal(t, string(corev1.PersistentVolumeReclaimDelete), vol.Annotations[v1alpha1.AnnotationReclaimPolicy])
	require.NotNil(t, vol.Spec.ClaimRef)
	assert.Equal(t, "shop", vol.Spec.ClaimRef.Namespace)
	assert.Equal(t, "data", vol.Spec.ClaimRef.Name)
	assert.Empty(t, vol.Spec.ClaimRef.UID, "pre-bound for the claim still to come")
	assert.Equal(t, "r1", vol.Labels[v1alpha1.LabelRestore])
}

// TestHandOverVolumeRetryNeverUnbindsAHandedOverVolume: once the target
// claim bound the volume, a retried hand-over finds it and changes
// nothing: no patch could clear the claim's UID or its reclaim policy.
func TestHandOverVolumeRetryNeverUnbindsAHandedOverVolume(t *testing.T) {
	f := newFixture(t)
	in := exposedRestore(t, f)
	pv, err := f.handOver(in)
	require.NoError(t, err)
	f.bindTargetClaim(t, pv)
	res := f.finish(t, v1alpha1.FinishVolumeRestoresInput{Restore: "r1", Location: f.url, Timeout: time.Second,
		Bindings: []v1alpha1.ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: pv}}})
	require.Empty(t, res.Unbound)
	before := f.volume(t, pv)
	require.Equal(t, corev1.PersistentVolumeReclaimDelete, before.Spec.PersistentVolumeReclaimPolicy)

	f.kube.ClearActions()
	again, err := f.handOver(in)
	require.NoError(t, err, "a retry finds the volume it handed over")
	assert.Equal(t, pv, again)
	assert.Zero(t, f.volumePatches(), "the handed-over volume is not touched again")
	after := f.volume(t, pv)
	assert.Equal(t, k8stypes.UID("target-uid"), after.Spec.ClaimRef.UID, "still bound to its claim")
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, after.Spec.PersistentVolumeReclaimPolicy, "its own policy stays")
}

// TestHandOverVolumeRetryAfterAPartialHandOverKeepsTheVolumesPolicy: a
// hand-over cut short after the volume was set to Retain is finished by
// its retry, and the volume still gets its original policy back, not
// Retain.
func TestHandOverVolumeRetryAfterAPartialHandOverKeepsTheVolumesPolicy(t *testing.T) {
	f := newFixture(t)
	in := exposedRestore(t, f)
	f.failClaimDeletes(1)
	_, err := f.handOver(in)
	activitytest.RequireRetryable(t, err)
	assert.Contains(t, err.Error(), "shop/data")
	require.Equal(t, corev1.PersistentVolumeReclaimRetain, f.volume(t, "pv-1").Spec.PersistentVolumeReclaimPolicy,
		"the first attempt got as far as keeping the volume")

	pv, err := f.handOver(in)
	require.NoError(t, err)
	assert.Equal(t, "pv-1", pv)
	vol := f.volume(t, pv)
	assert.Equal(t, string(corev1.PersistentVolumeReclaimDelete), vol.Annotations[v1alpha1.AnnotationReclaimPolicy],
		"the remembered policy is the volume's own, not the Retain of the first attempt")
	assert.Equal(t, "data", vol.Spec.ClaimRef.Name)

	f.bindTargetClaim(t, pv)
	res := f.finish(t, v1alpha1.FinishVolumeRestoresInput{Restore: "r1", Location: f.url, Timeout: time.Second,
		Bindings: []v1alpha1.ClaimBinding{{Namespace: "shop", Claim: "data", PersistentVolume: pv}}})
	assert.Empty(t, res.Unbound)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, f.volume(t, pv).Spec.PersistentVolumeReclaimPolicy)
}

// TestCleanupExposureDeletesAnAbandonedHandOversVolume: the cleanup of a
// restore whose hand-over was cut short gives the volume back to the
// cluster to delete: nothing would ever bind it.
func TestCleanupExposureDeletesAnAbandonedHandOversVolume(t *testing.T) {
	f := newFixture(t)
	f.emulateReclaim()
	in := exposedRestore(t, f)
	f.failClaimDeletes(1)
	_, err := f.handOver(in)
	require.Error(t, err)

	_, err = f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	_, err = f.kube.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the abandoned volume is deleted: %v", err)
	assert.Empty(t, f.pods(t))
}

// TestCleanupExposureLeavesAHandedOverVolume: after a finished hand-over
// the cleanup deletes nothing of the volume now the restore's.
func TestCleanupExposureLeavesAHandedOverVolume(t *testing.T) {
	f := newFixture(t)
	f.emulateReclaim()
	in := exposedRestore(t, f)
	pv, err := f.handOver(in)
	require.NoError(t, err)

	_, err = f.env.ExecuteActivity(f.acts.CleanupExposure, in)
	require.NoError(t, err)
	vol := f.volume(t, pv)
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, vol.Spec.PersistentVolumeReclaimPolicy)
	assert.Equal(t, "data", vol.Spec.ClaimRef.Name, "still waiting for its claim")
}

// handedOver is volume pv-1 as a hand-over leaves it: Retain, its own
// policy Delete remembered, pre-bound to shop/data.
func handedOver() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Annotations: map[string]string{v1alpha1.AnnotationReclaimPolicy: "Delete"}},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data"}},
	}
}

func targetClaim(volume string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func finishInput(url string, timeout time.Duration, bindings ...v1alpha1.ClaimBinding) v1alpha1.FinishVolumeRestoresInput {
	return v1alpha1.FinishVolumeRestoresInput{Restore: "r1", Location: url, Timeout: timeout, Bindings: bindings}
}

var shopDataOnPV1 = v1alpha1.ClaimBinding{Namespace: "shop", Claim: "data", PersistentVolume: "pv-1"}

// requireGivenBackForDeletion asserts the volume now has the Delete
// policy and a claimRef with a UID, so the volume controller releases and
// deletes it.
func requireGivenBackForDeletion(t *testing.T, pv *corev1.PersistentVolume) {
	t.Helper()
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, pv.Spec.PersistentVolumeReclaimPolicy)
	require.NotNil(t, pv.Spec.ClaimRef)
	assert.NotEmpty(t, pv.Spec.ClaimRef.UID, "a claimRef with a UID the controller finds gone")
}

// TestFinishVolumeRestoresGivesABoundVolumeItsPolicyBack: a claim bound
// to its volume is done and the volume gets back its own reclaim policy;
// each claim is judged on its own.
func TestFinishVolumeRestoresGivesABoundVolumeItsPolicyBack(t *testing.T) {
	pv2 := handedOver()
	pv2.Name, pv2.Spec.ClaimRef.Name = "pv-2", "logs"
	f := newFixture(t, handedOver(), targetClaim("pv-1", corev1.ClaimBound), pv2)
	logs := v1alpha1.ClaimBinding{Namespace: "shop", Claim: "logs", PersistentVolume: "pv-2"}

	res := f.finish(t, finishInput(f.url, 0, shopDataOnPV1, logs))
	assert.NotContains(t, res.Unbound, "shop/data", "a bound claim is not reported")
	assert.Contains(t, res.Unbound, "shop/logs", "a claim never created is")
	vol := f.volume(t, "pv-1")
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, vol.Spec.PersistentVolumeReclaimPolicy)
	assert.NotContains(t, vol.Annotations, v1alpha1.AnnotationReclaimPolicy)
}

// TestFinishVolumeRestoresDeletesTheVolumeOfAClaimThatBoundAnother: a
// claim bound to some other volume never binds the restored one, which is
// deleted at once.
func TestFinishVolumeRestoresDeletesTheVolumeOfAClaimThatBoundAnother(t *testing.T) {
	other := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-other"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain}}
	f := newFixture(t, handedOver(), targetClaim("pv-other", corev1.ClaimBound), other)

	res := f.finish(t, finishInput(f.url, time.Minute, shopDataOnPV1))
	require.Contains(t, res.Unbound, "shop/data")
	assert.Contains(t, res.Unbound["shop/data"], "pv-other")
	requireGivenBackForDeletion(t, f.volume(t, "pv-1"))
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, f.volume(t, "pv-other").Spec.PersistentVolumeReclaimPolicy,
		"the claim's own volume is not touched")
}

// TestFinishVolumeRestoresDeletesTheVolumeOfAClaimNeverCreated: when the
// timeout passes without the claim, its volume is deleted and the report
// says so.
func TestFinishVolumeRestoresDeletesTheVolumeOfAClaimNeverCreated(t *testing.T) {
	f := newFixture(t, handedOver())
	res := f.finish(t, finishInput(f.url, 0, shopDataOnPV1))
	require.Contains(t, res.Unbound, "shop/data")
	assert.Contains(t, res.Unbound["shop/data"], "pv-1 was deleted")
	requireGivenBackForDeletion(t, f.volume(t, "pv-1"))
}

// TestFinishVolumeRestoresLeavesTheVolumeOfAPendingClaim: a claim that
// exists but is not bound at the timeout may still bind: it is reported,
// and its volume kept as it is.
func TestFinishVolumeRestoresLeavesTheVolumeOfAPendingClaim(t *testing.T) {
	f := newFixture(t, handedOver(), targetClaim("", corev1.ClaimPending))
	res := f.finish(t, finishInput(f.url, 0, shopDataOnPV1))
	require.Contains(t, res.Unbound, "shop/data")
	assert.NotContains(t, res.Unbound["shop/data"], "deleted")
	vol := f.volume(t, "pv-1")
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, vol.Spec.PersistentVolumeReclaimPolicy)
	assert.Empty(t, vol.Spec.ClaimRef.UID)
	assert.Equal(t, "data", vol.Spec.ClaimRef.Name)
}

// TestFinishVolumeRestoresReportsAVolumeThatIsGone: a handed-over volume
// someone deleted is reported, not an error.
func TestFinishVolumeRestoresReportsAVolumeThatIsGone(t *testing.T) {
	f := newFixture(t, targetClaim("", corev1.ClaimPending))
	res := f.finish(t, finishInput(f.url, time.Minute, shopDataOnPV1))
	require.Contains(t, res.Unbound, "shop/data")
	assert.Contains(t, res.Unbound["shop/data"], "gone")
}

// TestFinishVolumeRestoresWaitsForTheClaimToBindAndHeartbeats: while a
// claim is pending the activity heartbeats the number still pending and
// looks again until it binds.
func TestFinishVolumeRestoresWaitsForTheClaimToBindAndHeartbeats(t *testing.T) {
	f := newFixture(t, handedOver(), targetClaim("", corev1.ClaimPending))
	var bound atomic.Bool
	f.onBeat = func() {
		if bound.Swap(true) {
			return
		}
		// The volume controller binds the claim after the first look.
		c := targetClaim("pv-1", corev1.ClaimBound)
		_, err := f.kube.CoreV1().PersistentVolumeClaims("shop").Update(context.Background(), c, metav1.UpdateOptions{})
		assert.NoError(t, err)
	}

	res := f.finish(t, finishInput(f.url, 10*time.Second, shopDataOnPV1))
	assert.Empty(t, res.Unbound, "the claim bound before the timeout")
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, f.volume(t, "pv-1").Spec.PersistentVolumeReclaimPolicy)
	counts := beats[int](t, f)
	require.NotEmpty(t, counts)
	assert.Equal(t, 1, counts[0], "the heartbeat counts the claims still pending")
}

// TestFinishVolumeRestoresFailsOnAClusterError: an error reading a claim
// fails the activity (to be retried) rather than deleting a volume whose
// claim might be fine.
func TestFinishVolumeRestoresFailsOnAClusterError(t *testing.T) {
	f := newFixture(t, handedOver())
	f.kube.PrependReactor("get", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	_, err := f.env.ExecuteActivity(f.acts.FinishVolumeRestores, finishInput(f.url, 0, shopDataOnPV1))
	activitytest.RequireRetryable(t, err)
	assert.True(t, strings.Contains(err.Error(), "shop/data"), err.Error())
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, f.volume(t, "pv-1").Spec.PersistentVolumeReclaimPolicy)
}
