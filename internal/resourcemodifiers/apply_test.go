package resourcemodifiers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func container(name, image string) map[string]any {
	return map[string]any{
		"name":  name,
		"image": image,
		"ports": []any{map[string]any{"containerPort": int64(8080)}},
	}
}

func deployment(name, namespace string, labels map[string]any, containers ...map[string]any) *unstructured.Unstructured {
	list := make([]any, 0, len(containers))
	for _, c := range containers {
		list = append(list, c)
	}
	metadata := map[string]any{"name": name, "namespace": namespace}
	if labels != nil {
		metadata["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   metadata,
		"spec": map[string]any{
			"replicas": int64(1),
			"template": map[string]any{
				"spec": map[string]any{"containers": list},
			},
		},
	}}
}

func mustParse(t *testing.T, doc string) *Rules {
	t.Helper()
	rules, err := Parse([]byte(doc))
	require.NoError(t, err)
	return rules
}

func containers(t *testing.T, obj *unstructured.Unstructured) []any {
	t.Helper()
	list, found, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.True(t, found)
	return list
}

func TestJSONPatchSetsReplicasAsNumber(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches:
  - operation: replace
    path: /spec/replicas
    value: "3"
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"))

	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[0]"}, changed)
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	require.NoError(t, err, "replicas must be a number, not the string \"3\"")
	require.True(t, found)
	assert.Equal(t, int64(3), replicas)
}

func TestMergePatchLabelsOnlyObjectsWhoseNameMatches(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    resourceNameRegex: "^web-.*$"
  mergePatches:
  - patchData: |
      {"metadata": {"labels": {"restored": "true"}}}
`)
	matching := deployment("web-frontend", "shop", map[string]any{"app": "web"}, container("app", "app:1"))
	other := deployment("db", "shop", map[string]any{"app": "db"}, container("db", "db:1"))

	changed, err := rules.Apply(matching, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[0]"}, changed)
	assert.Equal(t, map[string]string{"app": "web", "restored": "true"}, matching.GetLabels())

	changed, err = rules.Apply(other, "deployments.apps")
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Equal(t, map[string]string{"app": "db"}, other.GetLabels())
}

func TestStrategicPatchChangesOneContainerOnly(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  strategicPatches:
  - patchData: |
      spec:
        template:
          spec:
            containers:
            - name: app
              image: registry.example/app:2
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"), container("sidecar", "proxy:1"))

	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[0]"}, changed)

	list := containers(t, obj)
	require.Len(t, list, 2, "a strategic patch merges containers by name instead of replacing the list")
	byName := map[string]map[string]any{}
	for _, c := range list {
		c := c.(map[string]any)
		byName[c["name"].(string)] = c
	}
	assert.Equal(t, "registry.example/app:2", byName["app"]["image"])
	assert.Equal(t, []any{map[string]any{"containerPort": int64(8080)}}, byName["app"]["ports"], "fields the patch does not name stay")
	assert.Equal(t, container("sidecar", "proxy:1"), byName["sidecar"])
}

func TestConditionsExcludeNonMatchingObjects(t *testing.T) {
	const patch = `
  mergePatches:
  - patchData: '{"metadata": {"annotations": {"patched": "yes"}}}'
`
	cases := []struct {
		name       string
		conditions string
		matching   *unstructured.Unstructured
		other      *unstructured.Unstructured
	}{
		{
			name:       "namespaces",
			conditions: `{groupResource: deployments.apps, namespaces: [shop, "web-*"]}`,
			matching:   deployment("a", "web-eu", nil, container("app", "app:1")),
			other:      deployment("a", "billing", nil, container("app", "app:1")),
		},
		{
			name:       "labelSelector",
			conditions: `{groupResource: deployments.apps, labelSelector: {matchLabels: {app: web}}}`,
			matching:   deployment("a", "shop", map[string]any{"app": "web"}, container("app", "app:1")),
			other:      deployment("a", "shop", map[string]any{"app": "db"}, container("app", "app:1")),
		},
		{
			name: "matches",
			conditions: `
    groupResource: deployments.apps
    matches:
    - path: /spec/template/spec/containers/0/image
      value: "nginx:1.19"
    - path: /spec/replicas
      value: "1"`,
			matching: deployment("a", "shop", nil, container("app", "nginx:1.19")),
			other:    deployment("a", "shop", nil, container("app", "nginx:1.20")),
		},
		{
			name:       "groupResource",
			conditions: `{groupResource: deployments.apps}`,
			matching:   deployment("a", "shop", nil, container("app", "app:1")),
			other:      nil, // applied as statefulsets.apps below
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := mustParse(t, "version: v1\nresourceModifierRules:\n- conditions: "+tc.conditions+patch)

			changed, err := rules.Apply(tc.matching, "deployments.apps")
			require.NoError(t, err)
			assert.Len(t, changed, 1, "the matching object is patched")
			assert.Equal(t, "yes", tc.matching.GetAnnotations()["patched"])

			other, gr := tc.other, "deployments.apps"
			if other == nil {
				other, gr = deployment("a", "shop", nil, container("app", "app:1")), "statefulsets.apps"
			}
			before := other.DeepCopy()
			changed, err = rules.Apply(other, gr)
			require.NoError(t, err)
			assert.Empty(t, changed)
			assert.Equal(t, before, other)
		})
	}
}

func TestClusterScopedObjectsPassTheNamespacesCondition(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumes, namespaces: [shop]}
  patches: [{operation: add, path: /spec/storageClassName, value: fast}]
`)
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv-1"},
		"spec":     map[string]any{},
	}}
	changed, err := rules.Apply(pv, "persistentvolumes")
	require.NoError(t, err)
	assert.Len(t, changed, 1)
	assert.Equal(t, "fast", pv.Object["spec"].(map[string]any)["storageClassName"])
}

func TestRuleMatchingNothingChangesNothing(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, resourceNameRegex: "^nothing-here$"}
  patches: [{operation: replace, path: /spec/replicas, value: "9"}]
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"))
	before := obj.DeepCopy()

	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Equal(t, before, obj)
}

func TestRuleThatChangesNothingIsNotListed(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches: [{operation: replace, path: /spec/replicas, value: "1"}]
- conditions: {groupResource: deployments.apps}
  mergePatches: [{patchData: '{"spec": {"replicas": 2}}'}]
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"))

	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[1]"}, changed)
	assert.Equal(t, int64(2), obj.Object["spec"].(map[string]any)["replicas"])
}

func TestFailedPatchIsAnErrorAndLeavesObjectUnchanged(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  mergePatches: [{patchData: '{"metadata": {"labels": {"first": "rule"}}}'}]
- conditions: {groupResource: deployments.apps}
  patches:
  - operation: replace
    path: /spec/paused
    value: "true"
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"))
	before := obj.DeepCopy()

	changed, err := rules.Apply(obj, "deployments.apps")
	require.Error(t, err)
	assert.Nil(t, changed)
	assert.Contains(t, err.Error(), "resourceModifierRules[1]")
	assert.Contains(t, err.Error(), "patches[0] (replace /spec/paused)")
	assert.Equal(t, before, obj, "the first rule's change must not stay either")
}

func TestFailedTestOperationSkipsTheRule(t *testing.T) {
	// Velero documents "test" as a condition: on a mismatch the rule's
	// patches are left out and the restore goes on.
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches:
  - operation: test
    path: /spec/template/spec/containers/0/image
    value: "nginx:1.19"
  - operation: replace
    path: /spec/replicas
    value: "4"
`)
	other := deployment("web", "shop", nil, container("app", "app:1"))
	before := other.DeepCopy()
	changed, err := rules.Apply(other, "deployments.apps")
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Equal(t, before, other)

	matching := deployment("web", "shop", nil, container("app", "nginx:1.19"))
	changed, err = rules.Apply(matching, "deployments.apps")
	require.NoError(t, err)
	assert.Len(t, changed, 1)
	assert.Equal(t, int64(4), matching.Object["spec"].(map[string]any)["replicas"])
}

func TestConditionsSeeTheObjectBeforeEarlierRules(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  mergePatches: [{patchData: '{"metadata": {"labels": {"stage": "two"}}}'}]
- conditions: {groupResource: deployments.apps, labelSelector: {matchLabels: {stage: two}}}
  mergePatches: [{patchData: '{"metadata": {"labels": {"seen": "true"}}}'}]
`)
	obj := deployment("web", "shop", map[string]any{"stage": "one"}, container("app", "app:1"))

	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[0]"}, changed)
	assert.Equal(t, map[string]string{"stage": "two"}, obj.GetLabels())
}

func TestPatchKindsApplyInOrderJSONMergeStrategic(t *testing.T) {
	// Each kind overwrites the image the previous one set, so only this
	// order ends with the strategic patch's image.
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  strategicPatches:
  - patchData: '{"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "from-strategic"}]}}}}'
  mergePatches:
  - patchData: '{"metadata": {"annotations": {"image": "from-merge"}}}'
  patches:
  - operation: add
    path: /metadata/annotations
    value: '{"image": "from-json"}'
  - operation: replace
    path: /spec/template/spec/containers/0/image
    value: from-json
`)
	obj := deployment("web", "shop", nil, container("app", "app:1"))

	_, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, "from-merge", obj.GetAnnotations()["image"])
	assert.Equal(t, "from-strategic", containers(t, obj)[0].(map[string]any)["image"])
}

func TestStrategicPatchOnCustomResourceIsAnError(t *testing.T) {
	rules := mustParse(t, `version: v1
resourceModifierRules:
- conditions: {groupResource: widgets.example.com}
  strategicPatches: [{patchData: '{"spec": {"size": 2}}'}]
`)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	before := obj.DeepCopy()

	_, err := rules.Apply(obj, "widgets.example.com")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resourceModifierRules[0]: strategicPatches[0]")
	assert.Contains(t, err.Error(), "Widget")
	assert.Equal(t, before, obj)
}

func TestWildcardGroupResource(t *testing.T) {
	cases := []struct {
		pattern string
		matches []string
		misses  []string
	}{
		{"*", []string{"configmaps", "persistentvolumeclaims"}, []string{"deployments.apps"}},
		{"*.apps", []string{"deployments.apps", "statefulsets.apps"}, []string{"configmaps", "jobs.batch"}},
		{"*.*", []string{"deployments.apps", "jobs.batch"}, []string{"configmaps", "volumesnapshots.snapshot.storage.k8s.io"}},
		{"**", []string{"configmaps", "volumesnapshots.snapshot.storage.k8s.io"}, nil},
		{"{deployments,statefulsets}.apps", []string{"deployments.apps", "statefulsets.apps"}, []string{"daemonsets.apps"}},
		{"persistentvolumeclaims", []string{"persistentvolumeclaims"}, []string{"persistentvolumeclaims.storage.k8s.io", "persistentvolumes"}},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			rules := mustParse(t, fmt.Sprintf(`version: v1
resourceModifierRules:
- conditions: {groupResource: %q}
  mergePatches: [{patchData: '{"metadata": {"labels": {"hit": "yes"}}}'}]
`, tc.pattern))
			for _, gr := range tc.matches {
				changed, err := rules.Apply(deployment("a", "shop", nil), gr)
				require.NoError(t, err)
				assert.Len(t, changed, 1, gr)
			}
			for _, gr := range tc.misses {
				changed, err := rules.Apply(deployment("a", "shop", nil), gr)
				require.NoError(t, err)
				assert.Empty(t, changed, gr)
			}
		})
	}
}

func TestCopyOperationsCannotGrowObjectWithoutBound(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  patches:\n")
	doc.WriteString("  - {operation: add, path: /data, value: '{\"k\": \"" + strings.Repeat("x", 1<<16) + "\"}'}\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&doc, "  - {operation: copy, from: /data, path: /data/d%d}\n", i)
	}
	rules := mustParse(t, doc.String())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "shop"},
	}}

	_, err := rules.Apply(obj, "configmaps")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "grew past")
}

func TestPatchesThatCannotApplyAreErrors(t *testing.T) {
	cases := map[string]string{
		// The v4 library would copy null; RFC 6902 says the from must exist.
		"copy from a missing path": `patches: [{operation: copy, from: /spec/nothing, path: /spec/x}]`,
		// strategicpatch panics on a merge key that holds an object.
		"malformed strategic patch":   `strategicPatches: [{patchData: '{"spec": {"template": {"spec": {"containers": [{"name": {"x": 1}}]}}}}'}]`,
		"unknown strategic directive": `strategicPatches: [{patchData: '{"$patch": "bogus"}'}]`,
	}
	for name, patch := range cases {
		t.Run(name, func(t *testing.T) {
			rules := mustParse(t, "version: v1\nresourceModifierRules:\n- conditions: {groupResource: deployments.apps}\n  "+patch+"\n")
			obj := deployment("web", "shop", nil, container("app", "app:1"))
			before := obj.DeepCopy()

			_, err := rules.Apply(obj, "deployments.apps")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "resourceModifierRules[0]")
			assert.Equal(t, before, obj)
		})
	}
}
