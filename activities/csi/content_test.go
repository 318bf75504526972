package csi

import (
	"context"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned/fake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/internal/objects"
)

// runDeleteSnapshot runs deleteSnapshot inside an activity (it heartbeats)
// and gives up after two minutes, a bound against a hang that no passing
// run comes near, instead of waiting for good.
func runDeleteSnapshot(t *testing.T, a *Activities, namespace, name string, uid types.UID, content string) error {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return a.deleteSnapshot(ctx, namespace, name, uid, content)
	}, activity.RegisterOptions{Name: "DeleteSnapshot"})
	_, err := env.ExecuteActivity("DeleteSnapshot")
	return err
}

func keptContent(name, vsNamespace, vsName string, vsUID types.UID) *snapv1.VolumeSnapshotContent {
	return &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: snapv1.VolumeSnapshotContentSpec{
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain,
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: vsNamespace, Name: vsName, UID: vsUID},
		},
	}
}

// TestDeleteSnapshotDeletesAContentTheControllerLeft: the VolumeSnapshot
// goes but nothing deletes its content, which is what the snapshot
// controller does when its cache has not yet seen the content switched to
// Delete. deleteSnapshot deletes the content itself, marked so the sidecar
// deletes the driver's snapshot, instead of waiting for good.
func TestDeleteSnapshotDeletesAContentTheControllerLeft(t *testing.T) {
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "snap", UID: "vs-uid"}}
	content := keptContent("snapcontent-1", "shop", "snap", "vs-uid")
	client := snapfake.NewSimpleClientset(vs, content)
	var deleted []string
	client.PrependReactor("delete", "volumesnapshotcontents", func(action k8stesting.Action) (bool, runtime.Object, error) {
		c, err := client.Tracker().Get(action.GetResource(), "", action.(k8stesting.DeleteAction).GetName())
		if !assert.NoError(t, err) { // not require: this runs on the activity's goroutine
			return false, nil, nil
		}
		c2 := c.(*snapv1.VolumeSnapshotContent)
		assert.Equal(t, snapv1.VolumeSnapshotContentDelete, c2.Spec.DeletionPolicy, "deleted as Delete, so the driver's snapshot goes too")
		assert.Equal(t, "yes", c2.Annotations[objects.AnnotationSnapshotBeingDeleted])
		deleted = append(deleted, c2.Name)
		return false, nil, nil
	})
	a := &Activities{Snapshots: client, PollInterval: 10 * time.Millisecond}

	require.NoError(t, runDeleteSnapshot(t, a, "shop", "snap", "vs-uid", "snapcontent-1"))
	assert.Equal(t, []string{"snapcontent-1"}, deleted)
	_, err := client.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "snapcontent-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "content gone: %v", err)
}

// TestDeleteSnapshotLeavesAnotherVolumeSnapshot: a VolumeSnapshot of the
// same name but another UID (say a restore's) is not deleted; the kept
// content is.
func TestDeleteSnapshotLeavesAnotherVolumeSnapshot(t *testing.T) {
	other := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "snap", UID: "other-uid"}}
	content := keptContent("snapcontent-1", "shop", "snap", "vs-uid")
	client := snapfake.NewSimpleClientset(other, content)
	a := &Activities{Snapshots: client, PollInterval: 10 * time.Millisecond}

	require.NoError(t, runDeleteSnapshot(t, a, "shop", "snap", "vs-uid", "snapcontent-1"))
	got, err := client.SnapshotV1().VolumeSnapshots("shop").Get(context.Background(), "snap", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, types.UID("other-uid"), got.UID)
	_, err = client.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "snapcontent-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "content gone: %v", err)
}
