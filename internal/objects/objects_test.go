package objects

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON([]byte(js)))
	return u
}

func opts() Options {
	return Options{Backup: "b1", Restore: "r1", MapNamespace: func(ns string) string {
		if ns == "shop" {
			return "shop-copy"
		}
		return ns
	}}
}

func TestPrepareStripsServerFieldsAndLabels(t *testing.T) {
	o := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop","uid":"u1",
		"resourceVersion":"7","creationTimestamp":"2026-01-01T00:00:00Z","generation":2,"managedFields":[{}],
		"labels":{"app":"shop"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u0"}]},
		"data":{"k":"v"},"status":{"x":1}}`)
	Prepare(o, opts())
	assert.Equal(t, map[string]any{"name": "a", "namespace": "shop-copy",
		"labels":          map[string]any{"app": "shop", v1alpha1.LabelBackup: "b1", v1alpha1.LabelRestore: "r1"},
		"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u0"}},
	}, o.Object["metadata"], "owner references are the apply step's to resolve")
	assert.NotContains(t, o.Object, "status")

	keep := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"status":{"x":1}}`)
	o2 := opts()
	o2.KeepStatus = true
	Prepare(keep, o2)
	assert.Contains(t, keep.Object, "status")
}

func TestPrepareService(t *testing.T) {
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"type":"NodePort",
		"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"ports":[{"port":80,"nodePort":30080}]}}`
	o := obj(t, svc)
	Prepare(o, opts())
	spec := o.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "clusterIP")
	assert.NotContains(t, spec, "clusterIPs")
	assert.NotContains(t, spec["ports"].([]any)[0], "nodePort")

	kept := obj(t, svc)
	o2 := opts()
	o2.PreserveNodePorts = true
	Prepare(kept, o2)
	assert.EqualValues(t, 30080, kept.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"])

	headless := obj(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None"}}`)
	Prepare(headless, opts())
	assert.Equal(t, "None", headless.Object["spec"].(map[string]any)["clusterIP"], "headless stays headless")
}

func TestPrepareNamespaceAndBindings(t *testing.T) {
	ns := obj(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"},"status":{"phase":"Active"}}`)
	Prepare(ns, opts())
	assert.Equal(t, "shop-copy", ns.GetName())

	rb := obj(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"r","namespace":"shop"},
		"subjects":[{"kind":"ServiceAccount","name":"shop","namespace":"shop"},{"kind":"ServiceAccount","name":"x","namespace":"other"}]}`)
	Prepare(rb, opts())
	subjects := rb.Object["subjects"].([]any)
	assert.Equal(t, "shop-copy", subjects[0].(map[string]any)["namespace"])
	assert.Equal(t, "other", subjects[1].(map[string]any)["namespace"])
}

func TestPrepareTokensAndClaims(t *testing.T) {
	sec := obj(t, `{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"t",
		"annotations":{"kubernetes.io/service-account.name":"shop","kubernetes.io/service-account.uid":"old"}},"data":{"token":"eA=="}}`)
	Prepare(sec, opts())
	assert.NotContains(t, sec.Object, "data", "the target cluster issues its own token")
	assert.Equal(t, map[string]string{"kubernetes.io/service-account.name": "shop"}, sec.GetAnnotations())

	sa := obj(t, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"shop"},"secrets":[{"name":"shop-token-abcde"},{"name":"pull"}]}`)
	Prepare(sa, opts())
	assert.Equal(t, []any{map[string]any{"name": "pull"}}, sa.Object["secrets"])

	claim := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"shop",
		"annotations":{"pv.kubernetes.io/bind-completed":"yes"}},"spec":{"volumeName":"pv-1"}}`
	unbound := obj(t, claim)
	Prepare(unbound, opts())
	assert.NotContains(t, unbound.Object["spec"], "volumeName", "its volume is not restored: provision anew")
	assert.Empty(t, unbound.GetAnnotations())

	bound := obj(t, claim)
	o := opts()
	o.RestoredPV = func(name string) bool { return name == "pv-1" }
	Prepare(bound, o)
	assert.Equal(t, "pv-1", bound.Object["spec"].(map[string]any)["volumeName"])

	pv := obj(t, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},
		"spec":{"claimRef":{"namespace":"shop","name":"data","uid":"u","resourceVersion":"3"}}}`)
	Prepare(pv, opts())
	assert.Equal(t, map[string]any{"namespace": "shop-copy", "name": "data"}, pv.Object["spec"].(map[string]any)["claimRef"])
}

func TestSkipReason(t *testing.T) {
	pod := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","ownerReferences":[
		{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs1","controller":true}]}}`)
	restored := Index{Restored: func(uid string) bool { return uid == "rs1" }}
	assert.Contains(t, SkipReason("pods", pod, restored), "ReplicaSet web")
	assert.Empty(t, SkipReason("pods", pod, Index{Restored: func(string) bool { return false }}), "its owner is not restored: keep the pod")
	assert.Empty(t, SkipReason("configmaps", pod, restored), "only controller-made types are skipped")
	waits := restored
	waits.WaitsForData = func(ns, name string) bool { return name == "web-1" }
	assert.Empty(t, SkipReason("pods", pod, waits), "a pod that gets volume copies back is restored, for its controller to adopt")

	ep := obj(t, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web","namespace":"shop"}}`)
	assert.NotEmpty(t, SkipReason("endpoints", ep, Index{SelectorService: func(ns, n string) bool { return ns == "shop" && n == "web" }}))
	assert.Empty(t, SkipReason("endpoints", ep, Index{SelectorService: func(string, string) bool { return false }}), "hand-made endpoints are restored")

	slice := obj(t, `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-x",
		"labels":{"endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io"}}}`)
	assert.NotEmpty(t, SkipReason("endpointslices.discovery.k8s.io", slice, Index{}))
}

func TestEquivalentAndUpdatePatch(t *testing.T) {
	backed := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop","labels":{"app":"shop"}},"data":{"k":"v"}}`)
	Prepare(backed, opts())
	existing := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop-copy","uid":"x",
		"resourceVersion":"9","labels":{"app":"shop"}},"data":{"k":"v"}}`)
	assert.True(t, Equivalent(existing, backed, false), "server fields and restore labels do not count")

	existing.Object["data"] = map[string]any{"k": "changed", "extra": "1"}
	assert.False(t, Equivalent(existing, backed, false))
	patch, err := UpdatePatch(existing, backed, false)
	require.NoError(t, err)
	var p map[string]any
	require.NoError(t, json.Unmarshal(patch, &p))
	assert.Equal(t, map[string]any{"k": "v", "extra": nil}, p["data"], "patch restores the backed-up data")
	assert.Equal(t, map[string]any{v1alpha1.LabelBackup: "b1", v1alpha1.LabelRestore: "r1"}, p["metadata"].(map[string]any)["labels"])
	assert.NotContains(t, p["metadata"], "uid", "server fields are left alone")
}

func TestOrder(t *testing.T) {
	got := Order([]string{"widgets.example.com", "configmaps", "namespaces", "apples.example.com",
		"customresourcedefinitions.apiextensions.k8s.io"}, []string{"customresourcedefinitions.apiextensions.k8s.io", "namespaces", "configmaps"})
	assert.Equal(t, []string{"customresourcedefinitions.apiextensions.k8s.io", "namespaces", "configmaps",
		"apples.example.com", "widgets.example.com"}, got)
}

// TestEquivalentIgnoresBinding: a claim the cluster bound since, or bound
// to another volume, is the same claim; an update never patches binding.
func TestEquivalentIgnoresBinding(t *testing.T) {
	backed := obj(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"shop"},
		"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`)
	Prepare(backed, opts())
	bound := obj(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"shop-copy",
		"annotations":{"pv.kubernetes.io/bind-completed":"yes"}},
		"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeName":"pv-9"}}`)
	assert.True(t, Equivalent(bound, backed, false))
	bound.Object["spec"].(map[string]any)["accessModes"] = []any{"ReadWriteMany"}
	patch, err := UpdatePatch(bound, backed, false)
	require.NoError(t, err)
	assert.NotContains(t, string(patch), "volumeName")
	assert.NotContains(t, string(patch), "bind-completed")
}

// TestPreparePodLeavesItsNodeToTheScheduler: a restored pod is scheduled
// again, as its node may be gone and only the scheduler binds the
// volumes its claims wait for.
func TestPreparePodLeavesItsNodeToTheScheduler(t *testing.T) {
	o := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},
		"spec":{"nodeName":"node-1","containers":[{"name":"main","image":"app"}]}}`)
	Prepare(o, opts())
	_, found, _ := unstructured.NestedString(o.Object, "spec", "nodeName")
	assert.False(t, found)
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
	assert.Len(t, containers, 1)
}
