package objects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestReferencesNameWhatWorkloadsNeed(t *testing.T) {
	cases := []struct {
		gr, data string
		want     []Reference
	}{
		{ClaimsResource, `{"spec":{"volumeName":"pv-1","storageClassName":"fast"}}`,
			[]Reference{{PersistentVolumesResource, "pv-1"}, {StorageClassesResource, "fast"}}},
		{ClaimsResource, `{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},"spec":{}}`,
			[]Reference{{StorageClassesResource, "old"}}},
		{RoleBindingsResource, `{"roleRef":{"kind":"ClusterRole","name":"edit"}}`, []Reference{{ClusterRolesResource, "edit"}}},
		{RoleBindingsResource, `{"roleRef":{"kind":"Role","name":"local"}}`, nil},
		{"ingresses.networking.k8s.io", `{"spec":{"ingressClassName":"nginx"}}`, []Reference{{IngressClassesResource, "nginx"}}},
		{"deployments.apps", `{"spec":{"template":{"spec":{"priorityClassName":"high","runtimeClassName":"gvisor",
			"volumes":[{"name":"a","ephemeral":{"volumeClaimTemplate":{"spec":{"storageClassName":"scratch"}}}},{"name":"b"}]}}}}`,
			[]Reference{{PriorityClassesResource, "high"}, {RuntimeClassesResource, "gvisor"}, {StorageClassesResource, "scratch"}}},
		{"cronjobs.batch", `{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"priorityClassName":"low"}}}}}}`,
			[]Reference{{PriorityClassesResource, "low"}}},
		{"statefulsets.apps", `{"spec":{"volumeClaimTemplates":[{"spec":{"storageClassName":"fast"}}],"template":{"spec":{}}}}`,
			[]Reference{{StorageClassesResource, "fast"}}},
		{"pods", `{"spec":{"priorityClassName":"high"}}`, []Reference{{PriorityClassesResource, "high"}}},
		{"configmaps", `{"spec":{"priorityClassName":"high"}}`, nil},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, References(c.gr, []byte(c.data)), "%s %s", c.gr, c.data)
	}
	assert.Subset(t, ReferencingTypes(), []string{"cronjobs.batch", "ingresses.networking.k8s.io", ClaimsResource, RoleBindingsResource})
}

func TestBindingsOfServiceAccounts(t *testing.T) {
	crb := []byte(`{"roleRef":{"kind":"ClusterRole","name":"reader"},"subjects":[
		{"kind":"User","name":"alice"},{"kind":"ServiceAccount","name":"app","namespace":"shop"}]}`)
	assert.Equal(t, []string{"shop/app"}, ServiceAccountSubjects(crb))
	assert.Empty(t, ServiceAccountSubjects([]byte(`{"subjects":[{"kind":"Group","name":"shop"}]}`)))

	obj := &unstructured.Unstructured{}
	require.NoError(t, obj.UnmarshalJSON([]byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",`+
		`"metadata":{"name":"b"},"subjects":[{"kind":"User","name":"alice"},{"kind":"ServiceAccount","name":"app","namespace":"shop"},`+
		`{"kind":"ServiceAccount","name":"app","namespace":"other"}]}`)))
	KeepServiceAccountSubjects(obj, func(key string) bool { return key == "shop/app" })
	subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "app", "namespace": "shop"}}, subjects)
	assert.Equal(t, "reader", BoundClusterRole(crb))
	assert.Empty(t, BoundClusterRole([]byte(`{"roleRef":{"kind":"Role","name":"x"}}`)))
}
