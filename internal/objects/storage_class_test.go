package objects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPrepareMapsStorageClasses: a claim, a volume and a StatefulSet's
// claim templates get the mapped class; a class not in the mapping and
// other kinds are left alone.
func TestPrepareMapsStorageClasses(t *testing.T) {
	o := opts()
	o.StorageClasses = map[string]string{"gp2": "fast", "old": "standard"}
	class := func(u *unstructured.Unstructured, path ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		return s
	}

	claim := obj(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"db",
		"annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},"spec":{"storageClassName":"gp2"}}`)
	Prepare(claim, o)
	assert.Equal(t, "fast", class(claim, "spec", "storageClassName"))
	assert.Equal(t, "standard", claim.GetAnnotations()["volume.beta.kubernetes.io/storage-class"])

	pv := obj(t, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},"spec":{"storageClassName":"gp2"}}`)
	Prepare(pv, o)
	assert.Equal(t, "fast", class(pv, "spec", "storageClassName"))

	sts := obj(t, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"db"},"spec":{
		"volumeClaimTemplates":[{"metadata":{"name":"a"},"spec":{"storageClassName":"gp2"}},
		                        {"metadata":{"name":"b"},"spec":{"storageClassName":"premium"}},
		                        {"metadata":{"name":"c"},"spec":{}}]}}`)
	Prepare(sts, o)
	templates, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	var got []string
	for _, tpl := range templates {
		s, _, _ := unstructured.NestedString(tpl.(map[string]any), "spec", "storageClassName")
		got = append(got, s)
	}
	assert.Equal(t, []string{"fast", "premium", ""}, got)

	cm := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"spec":{"storageClassName":"gp2"}}`)
	Prepare(cm, o)
	assert.Equal(t, "gp2", class(cm, "spec", "storageClassName"), "only claims, volumes and StatefulSets")
}
