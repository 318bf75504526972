package expose

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned/fake"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/location"
)

// dmNamespace is the data mover namespace the activities are given.
const dmNamespace = "cairn-dm"

// fixture is a fake cluster served by the pod exposer, a file location,
// and an activity environment with the expose activities registered.
type fixture struct {
	kube  *kubefake.Clientset
	snaps *snapfake.Clientset
	acts  *Activities
	env   *testsuite.TestActivityEnvironment
	url   string
	loc   *location.Location

	mu         sync.Mutex
	heartbeats []converter.EncodedValues
	// onBeat, when set, is called on each heartbeat Temporal receives.
	onBeat func()
	// podsLinger is how many more pod lists still show pods a
	// DeleteCollection asked to delete (pods take a while to stop).
	podsLinger int
	doomedPods []string
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{kube: kubefake.NewClientset(objs...), snaps: snapfake.NewSimpleClientset()}
	f.emulatePodDeleteCollection()
	f.acts = &Activities{
		Exposer: &exposer.Pod{
			Volumes: &exposer.Volumes{Kube: f.kube, Snapshots: f.snaps, Poll: 5 * time.Millisecond},
			Config:  exposer.PodConfig{Image: "registry.example/cairn:test"},
		},
		Namespace: dmNamespace,
		Log:       zap.NewNop(),
	}
	f.url = "file://" + t.TempDir()
	loc, err := location.OpenPlain(context.Background(), f.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	f.loc = loc
	f.env = (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	f.env.RegisterActivity(f.acts)
	f.env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		f.mu.Lock()
		f.heartbeats = append(f.heartbeats, details)
		onBeat := f.onBeat
		f.mu.Unlock()
		if onBeat != nil {
			onBeat()
		}
	})
	return f
}

// emulatePodDeleteCollection makes the fake delete the pods a
// DeleteCollection selects (the fake tracker does not implement it), once
// podsLinger more lists have still shown them.
func (f *fixture) emulatePodDeleteCollection() {
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	f.kube.PrependReactor("delete-collection", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sel := action.(k8stesting.DeleteCollectionAction).GetListRestrictions().Labels
		obj, err := f.kube.Tracker().List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		for _, p := range obj.(*corev1.PodList).Items {
			if sel.Matches(labels.Set(p.Labels)) {
				f.doomedPods = append(f.doomedPods, p.Namespace+"/"+p.Name)
			}
		}
		return true, nil, nil
	})
	f.kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if f.podsLinger > 0 {
			f.podsLinger--
			return false, nil, nil
		}
		for _, key := range f.doomedPods {
			ns, name, _ := strings.Cut(key, "/")
			_ = f.kube.Tracker().Delete(podsGVR, ns, name)
		}
		f.doomedPods = nil
		return false, nil, nil
	})
}

// beats decodes the details of every heartbeat Temporal received into a
// T each.
func beats[T any](t *testing.T, f *fixture) []T {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []T
	for _, d := range f.heartbeats {
		var v T
		require.NotNil(t, d, "the heartbeat has details")
		require.NoError(t, d.Get(&v))
		out = append(out, v)
	}
	return out
}

// emulateReclaim plays the volume controller: a volume whose claim is gone
// and whose reclaim policy is Delete is deleted.
func (f *fixture) emulateReclaim() {
	pvGVR := corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	pvcGVR := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	f.kube.PrependReactor("get", "persistentvolumes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		name := action.(k8stesting.GetAction).GetName()
		obj, err := f.kube.Tracker().Get(pvGVR, "", name)
		if err != nil {
			return false, nil, nil
		}
		pv := obj.(*corev1.PersistentVolume)
		if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.ClaimRef == nil {
			return false, nil, nil
		}
		if _, err := f.kube.Tracker().Get(pvcGVR, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name); err == nil {
			return false, nil, nil
		}
		_ = f.kube.Tracker().Delete(pvGVR, "", name)
		return false, nil, nil
	})
}

// shopData is the backed-up (or restored) claim shop/data.
var shopData = v1alpha1.Volume{Namespace: "shop", Claim: "data", StorageClass: "fast"}

func restoreInput(url string) v1alpha1.ExposeInput {
	return v1alpha1.ExposeInput{Owner: "r1", Location: url, Mode: v1alpha1.ExposeRestore, Volume: shopData,
		SnapshotSize: 5 << 30, AccessModes: []string{"ReadWriteMany"},
		TaskQueue: v1alpha1.DataMoverTaskQueue("r1", shopData), Attempt: 1}
}

func backupInput(url string) v1alpha1.ExposeInput {
	return v1alpha1.ExposeInput{Owner: "b1", Location: url, Mode: v1alpha1.ExposeBackup, Volume: shopData,
		Snapshot: "snap", SnapshotSize: 1 << 30, TaskQueue: v1alpha1.DataMoverTaskQueue("b1", shopData), Attempt: 1}
}

// claimName is the data mover claim of in: the exposer's name for it.
func claimName(in v1alpha1.ExposeInput) string {
	return exposer.Target{TaskQueue: in.TaskQueue}.Name()
}

func (f *fixture) expose(t *testing.T, in v1alpha1.ExposeInput) *v1alpha1.ExposeResult {
	t.Helper()
	res, err := activitytest.Run[v1alpha1.ExposeResult](t, f.env, f.acts.ExposeVolume, in)
	require.NoError(t, err)
	return res
}

func (f *fixture) handOver(in v1alpha1.ExposeInput) (string, error) {
	val, err := f.env.ExecuteActivity(f.acts.HandOverVolume, in)
	if err != nil {
		return "", err
	}
	var res v1alpha1.HandOverResult
	if err := val.Get(&res); err != nil {
		return "", err
	}
	return res.PersistentVolume, nil
}

func (f *fixture) finish(t *testing.T, in v1alpha1.FinishVolumeRestoresInput) *v1alpha1.FinishVolumeRestoresResult {
	t.Helper()
	res, err := activitytest.Run[v1alpha1.FinishVolumeRestoresResult](t, f.env, f.acts.FinishVolumeRestores, in)
	require.NoError(t, err)
	return res
}

// bindDataMoverClaim plays the provisioner: it creates volume pv (reclaim
// policy Delete) for in's data mover claim and binds the claim to it.
func (f *fixture) bindDataMoverClaim(t *testing.T, in v1alpha1.ExposeInput, pv string) {
	t.Helper()
	ctx := context.Background()
	claims := f.kube.CoreV1().PersistentVolumeClaims(dmNamespace)
	c, err := claims.Get(ctx, claimName(in), metav1.GetOptions{})
	require.NoError(t, err)
	_, err = f.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: dmNamespace, Name: c.Name, UID: "dm-claim-uid"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	c.Spec.VolumeName = pv
	c.Status.Phase = corev1.ClaimBound
	_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func (f *fixture) volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := f.kube.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return pv
}

func (f *fixture) pods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := f.kube.CoreV1().Pods(dmNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return list.Items
}

// logKeys lists the activity log chunks stored under prefix.
func (f *fixture) logKeys(t *testing.T, prefix string) []string {
	t.Helper()
	keys, err := f.loc.Keys(context.Background(), prefix)
	require.NoError(t, err)
	return keys
}
