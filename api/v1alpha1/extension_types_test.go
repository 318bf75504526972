package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseExtensions(t *testing.T) {
	exts, err := ParseExtensions([]byte(`apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: widgets
  taskQueue: widgets-extension
  timeout: 90s
  backup:
    resources: [widgets.demo.cairn.io]
    includedNamespaces: [shop]
    labelSelector: app=shop
`))
	require.NoError(t, err)
	require.Len(t, exts, 1)
	assert.Equal(t, "widgets-extension", exts[0].TaskQueue)
	assert.Equal(t, "1m30s", exts[0].CallTimeout().String())
	assert.Equal(t, DefaultExtensionTimeout, Extension{}.CallTimeout())
}

// TestParseExtensionsRefuses: every problem of a registration is named,
// and a misspelt field is an error, not a selector that selects all.
func TestParseExtensionsRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"kind":          {"apiVersion: cairn.io/v1alpha1\nkind: Backup\nextensions: []\n", "want apiVersion cairn.io/v1alpha1 and kind Extensions"},
		"unknown field": {"apiVersion: cairn.io/v1alpha1\nkind: Extensions\nextensions:\n- name: a\n  taskQueue: q\n  backup: {resources: [pods], labelSelecter: x=y}\n", "unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseExtensions([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	err := ValidateExtensions([]Extension{
		{Name: "Bad_Name", TaskQueue: "q", Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "twice", TaskQueue: "q", Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "twice", TaskQueue: "cairn", Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "mover-queue", TaskQueue: "cairn-datamover-node1", Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "no-queue", Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "idle", TaskQueue: "q"},
		{Name: "slow", TaskQueue: "q", Timeout: metav1.Duration{Duration: 48 * time.Hour}, Backup: &ExtensionSelector{Resources: []string{"pods"}}},
		{Name: "selectors", TaskQueue: "q", Backup: &ExtensionSelector{Resources: []string{"apps/deployments", ""},
			IncludedNamespaces: []string{"["}, LabelSelector: "a=b=c"}},
		{Name: "empty", TaskQueue: "q", Backup: &ExtensionSelector{}},
		{Name: "deletes", TaskQueue: "q", Delete: &ExtensionSelector{}},
	})
	require.Error(t, err)
	for _, want := range []string{
		`extensions[0].name "Bad_Name"`,
		`extensions[2].name "twice": registered twice`,
		`extensions[2].taskQueue "cairn": cairn's own queues`,
		`extensions[3].taskQueue "cairn-datamover-node1": cairn's own queues`,
		`extensions[4].taskQueue: required`,
		`extensions[5]: acts on nothing (backup, restore and delete are empty)`,
		`extensions[6].timeout 48h0m0s: between 1s and 24h0m0s`,
		`extensions[7].backup.resources: "apps/deployments" is not a group-qualified resource`,
		`extensions[7].backup.resources: "" is not`,
		`extensions[7].backup.namespaces:`,
		`extensions[7].backup.labelSelector:`,
		`extensions[8].backup.resources: name at least one type`,
		`extensions[9].delete.resources: name at least one type`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestExtensionSelectsSecretsOnlyWhenAsked: Secrets cross Temporal only
// to an extension that names them and allows it.
func TestExtensionSelectsSecretsOnlyWhenAsked(t *testing.T) {
	all := &ExtensionSelector{Resources: []string{"*"}}
	assert.True(t, all.SelectsType("configmaps"))
	assert.True(t, all.SelectsType("widgets.demo.cairn.io"))
	assert.False(t, all.SelectsType("secrets"))
	assert.False(t, (&ExtensionSelector{Resources: []string{"*"}, AllowSecrets: true}).SelectsType("secrets"), "* never means Secrets")
	assert.False(t, (&ExtensionSelector{Resources: []string{"secrets"}}).SelectsType("secrets"))
	assert.True(t, (&ExtensionSelector{Resources: []string{"secrets"}, AllowSecrets: true}).SelectsType("secrets"))
	assert.False(t, (&ExtensionSelector{Resources: []string{"configmaps"}}).SelectsType("pods"))
	assert.False(t, (*ExtensionSelector)(nil).SelectsType("pods"))
}
