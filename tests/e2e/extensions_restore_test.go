package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

// registryRewriter is a restore extension: it moves container images
// from docker.io to registry.local (Velero's change-image-name, as an
// extension), skips the item named skip-me and fails fail-me.
type registryRewriter struct {
	mu   sync.Mutex
	seen []string
}

func (r *registryRewriter) RestoreItems(_ context.Context, req extension.RestoreItemsRequest) (*extension.RestoreItemsResponse, error) {
	resp := &extension.RestoreItemsResponse{}
	for _, raw := range req.Items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		name := obj["metadata"].(map[string]any)["name"].(string)
		r.mu.Lock()
		r.seen = append(r.seen, req.Resource.Resource+" "+obj["metadata"].(map[string]any)["namespace"].(string)+"/"+name)
		r.mu.Unlock()
		switch name {
		case "skip-me":
			resp.Items = append(resp.Items, extension.RestoreItemAnswer{Skip: "not wanted here"})
			continue
		case "fail-me":
			resp.Items = append(resp.Items, extension.RestoreItemAnswer{Error: "cannot restore this"})
			continue
		}
		changed := strings.ReplaceAll(string(raw), `"image":"docker.io/`, `"image":"registry.local/`)
		resp.Items = append(resp.Items, extension.RestoreItemAnswer{Item: json.RawMessage(changed)})
	}
	return resp, nil
}

// TestRestoreExtensions: a restore calls the extensions registered for
// it with the items it is about to create, as they will be created (in
// the mapped namespace): a Deployment is created with the images the
// extension rewrote, an item it skips or fails is not created and its
// outcome says so (the restore PartiallyFailed), and the extension is
// never sent items its selector leaves out.
func TestRestoreExtensions(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	doc := `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: registry
  taskQueue: e2e-registry
  restore:
    resources: [deployments.apps, configmaps]
    includedNamespaces: [ext-rs-target]
`
	s.startWorker("--extensions", extensionsFile(t, doc))
	ext := &registryRewriter{}
	serveExtension(t, s, "e2e-registry", func(w sdkworker.Worker) { extension.RegisterRestore(w, ext) })

	kc := fastClient(t, s.cluster.Config())
	makeConfigMaps(t, kc, "ext-rs", map[string]map[string]string{"keep": nil, "skip-me": nil, "fail-me": nil})
	makeWebDeployment(t, kc, "ext-rs", corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "docker.io/library/nginx:1.27"}}})
	s.backup(v1alpha1.BackupSpec{Name: "ext-rs-1", IncludedNamespaces: []string{"ext-rs"}})

	v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "ext-rs-r1", BackupName: "ext-rs-1",
		NamespaceMapping: map[string]string{"ext-rs": "ext-rs-target"}}}, 2*time.Minute)
	require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "%+v", v.Status)

	dep, err := kc.AppsV1().Deployments("ext-rs-target").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "registry.local/library/nginx:1.27", dep.Spec.Template.Spec.Containers[0].Image, "created as the extension answered")
	_, err = kc.CoreV1().ConfigMaps("ext-rs-target").Get(ctx, "keep", metav1.GetOptions{})
	require.NoError(t, err)
	for _, name := range []string{"skip-me", "fail-me"} {
		_, err := kc.CoreV1().ConfigMaps("ext-rs-target").Get(ctx, name, metav1.GetOptions{})
		assert.Error(t, err, "%s is not created", name)
	}
	outcomes := s.outcomes("ext-rs-r1")
	assert.Equal(t, v1alpha1.ItemSkipped, outcomes["configmaps ext-rs-target/skip-me"].Result)
	assert.Equal(t, "extension registry: not wanted here", outcomes["configmaps ext-rs-target/skip-me"].Reason)
	assert.Equal(t, v1alpha1.ItemFailed, outcomes["configmaps ext-rs-target/fail-me"].Result)
	assert.Equal(t, "extension registry: cannot restore this", outcomes["configmaps ext-rs-target/fail-me"].Reason)
	assert.Equal(t, v1alpha1.ItemRestored, outcomes["deployments.apps ext-rs-target/web"].Result)
	for _, seen := range ext.seen {
		assert.True(t, strings.HasPrefix(seen, "configmaps ext-rs-target/") || seen == "deployments ext-rs-target/web",
			"the extension is sent only the types and namespace it selects, as they will be created: %s", seen)
	}
	assert.Contains(t, ext.seen, "deployments ext-rs-target/web")
}

// gatedRewriter is a registryRewriter whose first call waits at a gate.
type gatedRewriter struct {
	registryRewriter
	*gate
}

func (g *gatedRewriter) RestoreItems(ctx context.Context, req extension.RestoreItemsRequest) (*extension.RestoreItemsResponse, error) {
	if err := g.hold(ctx); err != nil {
		return nil, err
	}
	return g.registryRewriter.RestoreItems(ctx, req)
}

// TestRestoreExtensionSurvivesAWorkerKill: cairn's worker is killed
// (SIGKILL) while a restore's apply step waits on an extension's call.
// The retried step (attempt 2 in the history) finds the call already made:
// the extension sees each item once, and every item is restored once.
// While it waits, describe names the extension.
func TestRestoreExtensionSurvivesAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	file := extensionsFile(t, `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: registry
  taskQueue: e2e-registry-kill
  restore: {resources: [configmaps], includedNamespaces: [ext-rk-target]}
`)
	w := s.startWorker("--extensions", file)
	ext := &gatedRewriter{gate: newGate()}
	serveExtension(t, s, "e2e-registry-kill", func(w sdkworker.Worker) { extension.RegisterRestore(w, ext) })

	kc := fastClient(t, s.cluster.Config())
	names := map[string]map[string]string{}
	for i := range 20 {
		names[fmt.Sprintf("cm-%02d", i)] = nil
	}
	makeConfigMaps(t, kc, "ext-rk", names)
	s.backup(v1alpha1.BackupSpec{Name: "ext-rk-1", IncludedNamespaces: []string{"ext-rk"}})

	_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "ext-rk-r1", BackupName: "ext-rk-1",
		NamespaceMapping: map[string]string{"ext-rk": "ext-rk-target"}},
		Options: v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
	require.NoError(t, err)
	ext.awaitEntered(t, s, v1alpha1.RestoreWorkflowID("ext-rk-r1"))
	awaitHeartbeat(t, s, v1alpha1.RestoreWorkflowID("ext-rk-r1"), time.Now())
	stdout, stderr, code := s.cli("restore", "describe", "ext-rk-r1")
	require.Zero(t, code, stderr)
	assert.Contains(t, stdout, "Waiting on:", "describe names the extension the restore waits on")
	assert.Contains(t, stdout, "extension registry (task queue e2e-registry-kill)")
	w.kill()
	s.startWorker("--extensions", file)
	close(ext.release)

	v := s.waitRestore("ext-rk-r1", 2*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Greater(t, activityAttempt(t, s, v1alpha1.RestoreWorkflowID("ext-rk-r1"), applyActivity), int32(1),
		"the kill landed mid-step: the apply step ran again")
	counts := map[string]int{}
	for _, seen := range ext.seen {
		counts[seen]++
	}
	require.Len(t, counts, 20)
	for item, n := range counts {
		assert.Equal(t, 1, n, "%s sent to the extension %d times", item, n)
	}
	list, err := kc.CoreV1().ConfigMaps("ext-rk-target").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 20)
}
