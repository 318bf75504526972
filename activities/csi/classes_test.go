package csi

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func snapClass(name, driver string, labelled, isDefault bool) snapv1.VolumeSnapshotClass {
	c := snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}, Driver: driver}
	if labelled {
		c.Labels[v1alpha1.LabelSnapshotClass] = "true"
	}
	if isDefault {
		c.Annotations[annotationDefaultClass] = "true"
	}
	return c
}

func claim(annotation string) corev1.PersistentVolumeClaim {
	c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}}
	if annotation != "" {
		c.Annotations = map[string]string{v1alpha1.AnnotationSnapshotClass: annotation}
	}
	return c
}

// TestClassChoice: the claim's annotation, else the driver's labelled
// class, else its default; anything ambiguous or missing is a warning that
// names the claim.
func TestClassChoice(t *testing.T) {
	c := &classChooser{byDriver: map[string][]snapv1.VolumeSnapshotClass{
		"a": {snapClass("a-default", "a", false, true), snapClass("a-cairn", "a", true, false), snapClass("a-other", "a", false, false)},
		"b": {snapClass("b-default", "b", false, true)},
		"c": {snapClass("c-1", "c", false, true), snapClass("c-2", "c", false, true)},
		"d": {snapClass("d-plain", "d", false, false)},
	}}
	for _, tc := range []struct {
		driver, annotation, class, warning string
	}{
		{driver: "a", class: "a-cairn"},
		{driver: "a", annotation: "a-other", class: "a-other"},
		{driver: "a", annotation: "b-default", warning: `claim shop/data asks for VolumeSnapshotClass "b-default"`},
		{driver: "b", class: "b-default"},
		{driver: "c", warning: "several default VolumeSnapshotClasses (c-1, c-2)"},
		{driver: "d", warning: "none is its default or labelled"},
		{driver: "e", warning: "CSI driver e, which has no VolumeSnapshotClass"},
	} {
		got, warning := c.choose(claim(tc.annotation), tc.driver)
		assert.Equal(t, tc.class, got, "%+v", tc)
		if tc.warning == "" {
			assert.Empty(t, warning, "%+v", tc)
		} else {
			assert.Contains(t, warning, tc.warning, "%+v", tc)
		}
	}
}
