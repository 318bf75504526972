package objects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestPrepareSnapshotsPointAtTheBackedUpSnapshot: a restored content is a
// pre-provisioned copy (new name, the driver's handle, Retain, bound ahead
// to the mapped VolumeSnapshot) and the VolumeSnapshot binds to it; the
// controllers' finalizers and cairn's retention labels are dropped.
func TestPrepareSnapshotsPointAtTheBackedUpSnapshot(t *testing.T) {
	content := obj(t, `{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent",
		"metadata":{"name":"snapcontent-1","finalizers":["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
			"labels":{"cairn.io/snapshot-alias-name":"data-b1-x","cairn.io/snapshot-volume-name":"pv-1"},
			"annotations":{"snapshot.storage.kubernetes.io/volumesnapshot-being-created":"yes"}},
		"spec":{"deletionPolicy":"Retain","driver":"d","source":{"volumeHandle":"vol-1"},
			"volumeSnapshotRef":{"kind":"VolumeSnapshot","name":"data-b1-x","namespace":"shop","uid":"u1","resourceVersion":"9"}},
		"status":{"snapshotHandle":"snap-1","readyToUse":true}}`)
	Prepare(content, opts())
	assert.Equal(t, RestoredContentName("r1", "snapcontent-1"), content.GetName())
	assert.Equal(t, map[string]any{"snapshotHandle": "snap-1"}, nested(t, content, "spec", "source"))
	assert.Equal(t, "Retain", nested(t, content, "spec", "deletionPolicy"))
	assert.Equal(t, map[string]any{"kind": "VolumeSnapshot", "name": "data-b1-x", "namespace": "shop-copy"},
		nested(t, content, "spec", "volumeSnapshotRef"))
	assert.Empty(t, content.GetFinalizers())
	assert.Equal(t, map[string]string{v1alpha1.LabelBackup: "b1", v1alpha1.LabelRestore: "r1"}, content.GetLabels())
	assert.Empty(t, content.GetAnnotations())

	vs := obj(t, `{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot",
		"metadata":{"name":"data-b1-x","namespace":"shop","finalizers":["snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"]},
		"spec":{"source":{"persistentVolumeClaimName":"data"},"volumeSnapshotClassName":"c"},
		"status":{"boundVolumeSnapshotContentName":"snapcontent-1","readyToUse":true}}`)
	Prepare(vs, opts())
	assert.Equal(t, "shop-copy", vs.GetNamespace())
	assert.Equal(t, map[string]any{"volumeSnapshotContentName": RestoredContentName("r1", "snapcontent-1")}, nested(t, vs, "spec", "source"))
	assert.Empty(t, vs.GetFinalizers())
}

func TestPrepareClaimFromItsSnapshot(t *testing.T) {
	claim := obj(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"shop",
			"annotations":{"pv.kubernetes.io/bind-completed":"yes","volume.kubernetes.io/storage-provisioner":"d"}},
		"spec":{"volumeName":"pv-1","dataSourceRef":{"kind":"Other","name":"x"}}}`)
	o := opts()
	o.ClaimSnapshot = func(ns, name string) string {
		if ns == "shop" && name == "data" { // the backed-up namespace, before mapping
			return "data-b1-x"
		}
		return ""
	}
	Prepare(claim, o)
	assert.Equal(t, map[string]any{"apiGroup": SnapshotGroup, "kind": "VolumeSnapshot", "name": "data-b1-x"},
		nested(t, claim, "spec", "dataSource"))
	assert.NotContains(t, claim.Object["spec"], "volumeName")
	assert.NotContains(t, claim.Object["spec"], "dataSourceRef")
	assert.Empty(t, claim.GetAnnotations())
}

func nested(t *testing.T, o *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(o.Object, fields...)
	assert.NoError(t, err)
	return v
}
