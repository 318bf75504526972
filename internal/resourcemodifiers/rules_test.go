package resourcemodifiers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRefusesInvalidDocuments(t *testing.T) {
	cases := []struct {
		name     string
		doc      string
		mentions []string
	}{
		{
			name:     "malformed YAML",
			doc:      "version: v1\nresourceModifierRules:\n- conditions: [\n",
			mentions: []string{"line"},
		},
		{
			name: "unknown version",
			doc: `version: v2
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{`"v2"`},
		},
		{
			name: "unknown top-level field",
			doc: `version: v1
rules: []
`,
			mentions: []string{`unknown field "rules"`},
		},
		{
			name: "unknown field in a rule",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: remove, path: /spec/x}]
- conditions: {groupResource: pods, resourceName: web}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{"resourceModifierRules[1]", `unknown field "resourceName"`},
		},
		{
			name: "invalid JSON Patch operation",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: upsert, path: /spec/x, value: "1"}]
`,
			mentions: []string{"resourceModifierRules[0]", "patches[0]", `"upsert"`},
		},
		{
			name: "path that is not a JSON pointer",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: remove, path: spec.x}]
`,
			mentions: []string{"resourceModifierRules[0]", "patches[0]", "JSON pointer"},
		},
		{
			name: "invalid regex",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: remove, path: /spec/x}]
- conditions: {groupResource: pods, resourceNameRegex: "web-("}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{"resourceModifierRules[1]", "resourceNameRegex"},
		},
		{
			name: "invalid label selector",
			doc: `version: v1
resourceModifierRules:
- conditions:
    groupResource: pods
    labelSelector: {matchExpressions: [{key: app, operator: Near}]}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{"resourceModifierRules[0]", "labelSelector"},
		},
		{
			name: "patchData that is not an object",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  mergePatches:
  - patchData: "[1, 2]"
`,
			mentions: []string{"resourceModifierRules[0]", "mergePatches[0]", "object"},
		},
		{
			name: "strategic patchData that is a scalar",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  strategicPatches:
  - patchData: just text
`,
			mentions: []string{"resourceModifierRules[0]", "strategicPatches[0]", "object"},
		},
		{
			name: "rule without groupResource",
			doc: `version: v1
resourceModifierRules:
- conditions: {namespaces: [shop]}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{"resourceModifierRules[0]", "groupResource"},
		},
		{
			name: "rule without patches",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
`,
			mentions: []string{"resourceModifierRules[0]", "no patch"},
		},
		{
			name: "bad groupResource glob",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: "{deployments,statefulsets.apps"}
  patches: [{operation: remove, path: /spec/x}]
`,
			mentions: []string{"resourceModifierRules[0]", "groupResource"},
		},
		{
			name: "value Velero would paste as broken JSON",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: add, path: /metadata/labels/x, value: "{not json"}]
`,
			mentions: []string{"resourceModifierRules[0]", "patches[0]", "value"},
		},
		{
			name: "move without from",
			doc: `version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: move, path: /spec/y}]
`,
			mentions: []string{"resourceModifierRules[0]", "patches[0]", "from"},
		},
		{
			name:     "no rules",
			doc:      "version: v1\nresourceModifierRules: []\n",
			mentions: []string{"empty"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := Parse([]byte(tc.doc))
			require.Error(t, err)
			assert.Nil(t, rules)
			assert.ErrorIs(t, err, ErrInvalid)
			for _, m := range tc.mentions {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestParseAcceptsJSON(t *testing.T) {
	doc := `{
	"version": "v1",
	"resourceModifierRules": [
		{
			"conditions": {"groupResource": "deployments.apps", "namespaces": ["shop"]},
			"patches": [{"operation": "replace", "path": "/spec/replicas", "value": "3"}]
		},
		{
			"conditions": {"groupResource": "configmaps"},
			"mergePatches": [{"patchData": "{\"data\": {\"k\": \"v\"}}"}]
		}
	]
}`
	rules, err := Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, 2, rules.Len())

	obj := deployment("web", "shop", nil, container("app", "app:1"))
	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Equal(t, []string{"resourceModifierRules[0]"}, changed)
	assert.Equal(t, int64(3), obj.Object["spec"].(map[string]any)["replicas"])
}

func TestParseReadsUnquotedScalarsAsVeleroDoes(t *testing.T) {
	// Velero's decoder turns YAML numbers and booleans into the strings its
	// fields hold; a file relying on it must parse here too.
	doc := `version: V1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    labelSelector: {matchLabels: {tier: 1, canary: true}}
  patches:
  - operation: replace
    path: /spec/replicas
    value: 5
`
	rules, err := Parse([]byte(doc))
	require.NoError(t, err)

	obj := deployment("web", "shop", map[string]any{"tier": "1", "canary": "true"}, container("app", "app:1"))
	changed, err := rules.Apply(obj, "deployments.apps")
	require.NoError(t, err)
	assert.Len(t, changed, 1)
	assert.Equal(t, int64(5), obj.Object["spec"].(map[string]any)["replicas"])
}

func TestLenOfNilRules(t *testing.T) {
	var rules *Rules
	assert.Equal(t, 0, rules.Len())
}
