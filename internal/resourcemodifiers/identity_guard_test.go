package resourcemodifiers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestParseRefusesRulesThatMoveObjects: the escalation moved a
// RoleBinding into another namespace with a merge patch. Every patch
// form that writes the name or the namespace is refused when parsed,
// naming its rule; those that write next to them are not.
func TestParseRefusesRulesThatMoveObjects(t *testing.T) {
	refused := map[string]string{
		"merge patch of the namespace":     `mergePatches: [{patchData: '{"metadata":{"namespace":"kube-system"}}'}]`,
		"merge patch deleting the name":    `mergePatches: [{patchData: '{"metadata":{"name":null}}'}]`,
		"merge patch replacing metadata":   `mergePatches: [{patchData: '{"metadata":null}'}]`,
		"strategic patch of the name":      `strategicPatches: [{patchData: '{"metadata":{"name":"other"}}'}]`,
		"JSON patch replacing a namespace": `patches: [{operation: replace, path: /metadata/namespace, value: kube-system}]`,
		"JSON patch adding metadata":       `patches: [{operation: add, path: /metadata, value: '{"name":"x"}'}]`,
		"JSON patch removing the name":     `patches: [{operation: remove, path: /metadata/name}]`,
		"JSON patch copying into the name": `patches: [{operation: copy, from: /spec/x, path: /metadata/name}]`,
		"JSON patch moving the namespace":  `patches: [{operation: move, from: /metadata/namespace, path: /spec/x}]`,
	}
	for name, patch := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte("version: v1\nresourceModifierRules:\n- conditions: {groupResource: rolebindings.rbac.authorization.k8s.io}\n  " + patch + "\n"))
			require.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, "resourceModifierRules[0]")
			assert.ErrorContains(t, err, "may not change metadata.name or metadata.namespace")
		})
	}
	allowed := []string{
		`mergePatches: [{patchData: '{"metadata":{"labels":{"team":"a"}}}'}]`,
		`patches: [{operation: add, path: /metadata/labels/team, value: a}]`,
		`patches: [{operation: test, path: /metadata/namespace, value: team-a}]`,
		`patches: [{operation: copy, from: /metadata/name, path: /metadata/labels/name}]`,
	}
	for _, patch := range allowed {
		_, err := Parse([]byte("version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  " + patch + "\n"))
		assert.NoError(t, err, patch)
	}
}

// TestApplyKeepsNameAndNamespace holds the rule at apply time too: a
// rule built around Parse's check (here by hand) cannot move an object.
func TestApplyKeepsNameAndNamespace(t *testing.T) {
	rules, err := Parse([]byte("version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps}\n  mergePatches: [{patchData: '{\"data\":{\"a\":\"1\"}}'}]\n"))
	require.NoError(t, err)
	rules.rules[0].mergePatches = [][]byte{[]byte(`{"metadata":{"namespace":"kube-system"}}`)}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "prices", "namespace": "team-a"}}}
	_, err = rules.Apply(obj, "configmaps")
	require.ErrorContains(t, err, "may not change metadata.name or metadata.namespace")
	assert.Equal(t, "team-a", obj.GetNamespace(), "the object is left as it was")
}
