package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// modifierRules is a Velero resource-modifier document: a JSON Patch, a
// merge patch by name regex, a strategic merge patch of one container,
// and a rule that matches nothing.
const modifierRules = `version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [mod]}
  patches:
  - {operation: replace, path: /spec/replicas, value: "3"}
- conditions: {groupResource: configmaps, resourceNameRegex: "^cache-"}
  mergePatches:
  - patchData: '{"metadata": {"labels": {"tier": "cache"}}}'
- conditions: {groupResource: deployments.apps, resourceNameRegex: "^web$"}
  strategicPatches:
  - patchData: |
      spec: {template: {spec: {containers: [{name: app, image: "registry.example/app:2"}]}}}
- conditions: {groupResource: secrets, resourceNameRegex: "^nothing-matches$"}
  mergePatches:
  - patchData: '{"metadata": {"labels": {"never": "x"}}}'
`

// TestResourceModifiers restores a namespace through Velero-format
// resource modifiers, given inline from a file and from a ConfigMap in
// the worker's namespace: each rule changes what it matches and nothing
// else, the results name the rules that changed each object, and
// documents that are malformed, of an unknown version or with an
// invalid patch are refused before anything starts (exit 2).
func TestResourceModifiers(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	// Its config namespace is its own, not the default cairn: the
	// control plane is shared.
	s.startWorker("--config-namespace", "mod-config")
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mod"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = kc.AppsV1().Deployments("mod").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Image: "registry.example/app:1"}, {Name: "sidecar", Image: "registry.example/proxy:1"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"cache-a", "cache-b", "other"} {
		_, err := kc.CoreV1().ConfigMaps("mod").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s.backup(v1alpha1.BackupSpec{Name: "mod-1", IncludedNamespaces: []string{"mod"}})
	deleteNamespace(t, s.cluster.Config(), "mod")
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}

	t.Run("refused before anything starts", func(t *testing.T) {
		for doc, want := range map[string]string{
			"version: v1\nresourceModifierRules: [":                                                                                            "resourceModifiers",
			"version: v2\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  mergePatches: []\n":                                   `version "v2" is not supported`,
			"version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches:\n  - {operation: frobnicate, path: /spec}\n": "resourceModifierRules[0]",
		} {
			_, stderr, code := s.cli("restore", "create", "mod-bad", "--from-backup", "mod-1", "--resource-modifiers", file("bad.yaml", doc))
			assert.Equal(t, 2, code, "%s: %s", doc, stderr)
			assert.Contains(t, stderr, want, doc)
		}
		_, err := s.starter.GetRestore(ctx, "mod-bad")
		assert.ErrorIs(t, err, starter.ErrNotFound, "nothing started")
	})

	t.Run("from a file: each rule changes what it matches", func(t *testing.T) {
		_, stderr, code := s.cli("restore", "create", "mod-r1", "--from-backup", "mod-1", "--resource-modifiers", file("rules.yaml", modifierRules), "--wait")
		require.Equal(t, 0, code, stderr)
		web, err := kc.AppsV1().Deployments("mod").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(3), *web.Spec.Replicas, "the JSON Patch")
		images := map[string]string{}
		for _, c := range web.Spec.Template.Spec.Containers {
			images[c.Name] = c.Image
		}
		assert.Equal(t, map[string]string{"app": "registry.example/app:2", "sidecar": "registry.example/proxy:1"}, images,
			"the strategic merge patch changes one container")
		for name, tier := range map[string]string{"cache-a": "cache", "cache-b": "cache", "other": ""} {
			cm, err := kc.CoreV1().ConfigMaps("mod").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tier, cm.Labels["tier"], "the merge patch by name: %s", name)
		}

		var results v1alpha1.RestoreResults
		require.NoError(t, json.Unmarshal(readLocation(t, s, "restores/mod-r1/results.json"), &results))
		changed := map[string][]string{}
		for _, it := range results.Items {
			if len(it.Modifiers) > 0 {
				changed[it.Resource+"/"+it.Name] = it.Modifiers
			}
		}
		assert.Equal(t, map[string][]string{
			"deployments.apps/web": {"resourceModifierRules[0]", "resourceModifierRules[2]"},
			"configmaps/cache-a":   {"resourceModifierRules[1]"},
			"configmaps/cache-b":   {"resourceModifierRules[1]"},
		}, changed, "the rule that matches nothing changed nothing")
	})

	t.Run("from a ConfigMap in the worker's namespace", func(t *testing.T) {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mod-config"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("mod-config").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
			Data: map[string]string{"rules.yaml": "version: v1\nresourceModifierRules:\n- conditions: {groupResource: deployments.apps}\n" +
				"  patches:\n  - {operation: replace, path: /spec/replicas, value: \"5\"}\n"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		r := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "mod-r2", BackupName: "mod-1",
			NamespaceMapping: map[string]string{"mod": "mod-2"}, ResourceModifiers: &v1alpha1.DocumentRef{ConfigMap: "replicas"}}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		web, err := kc.AppsV1().Deployments("mod-2").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(5), *web.Spec.Replicas)

		r = s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "mod-r3", BackupName: "mod-1",
			NamespaceMapping: map[string]string{"mod": "mod-3"}, ResourceModifiers: &v1alpha1.DocumentRef{ConfigMap: "no-such-map"}}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseFailed, r.Phase)
		assert.Contains(t, r.Status.FailureReason, "configmap mod-config/no-such-map")
	})
}
