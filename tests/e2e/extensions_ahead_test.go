package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	workflowpb "go.temporal.io/api/workflow/v1"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

// restoreFirstAnnotation names, on a ConfigMap, the Secret its extension
// asks to be restored before it; waitForAnnotation another ConfigMap it
// waits for.
const (
	restoreFirstAnnotation = "e2e.cairn.io/restore-first"
	waitForAnnotation      = "e2e.cairn.io/wait-for"
)

// dependencies is a restore extension: a ConfigMap that names a Secret in
// restoreFirstAnnotation asks for it as an additional item, and waits for
// the ConfigMap waitForAnnotation names; every Secret is marked as
// restored by it. Its first call for Secrets waits at the
// gate.
type dependencies struct {
	*gate
	mu   sync.Mutex
	seen map[string]int
}

func (d *dependencies) RestoreItems(ctx context.Context, req extension.RestoreItemsRequest) (*extension.RestoreItemsResponse, error) {
	if req.Resource.Resource == "secrets" {
		if err := d.hold(ctx); err != nil {
			return nil, err
		}
	}
	resp := &extension.RestoreItemsResponse{Items: make([]extension.RestoreItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		d.mu.Lock()
		d.seen[req.Resource.Resource+" "+obj.GetName()]++
		d.mu.Unlock()
		if req.Resource.Resource == "configmaps" {
			if name := obj.GetAnnotations()[restoreFirstAnnotation]; name != "" {
				resp.Items[i].AdditionalItems = []extension.ObjectRef{{Resource: "secrets", Namespace: obj.GetNamespace(), Name: name}}
			}
			if name := obj.GetAnnotations()[waitForAnnotation]; name != "" {
				resp.Items[i].WaitFor = &extension.WaitFor{Items: []extension.ObjectRef{{Resource: "configmaps", Namespace: obj.GetNamespace(), Name: name}}}
			}
			continue
		}
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["e2e.cairn.io/restored-by"] = "dependencies"
		obj.SetAnnotations(ann)
		changed, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		resp.Items[i].Item = changed
	}
	return resp, nil
}

// TestRestoreAdditionalItemsThroughAWorkerKill: a ConfigMap's extension
// asks for a Secret, a type restored after ConfigMaps, to be restored
// first, and for the ConfigMap to wait for another the test makes. While
// the Secret's own extension call, made ahead of its type, is held, the
// ConfigMap does not exist; once the Secret is restored ahead and the
// ConfigMap waits, cairn's worker is killed (SIGKILL). The retried step
// (attempt 2) takes the Secret's recorded outcome: the Secret exists
// before the ConfigMap, with its extension's answer, is sent to its
// extension once and counted once, in its type; a ConfigMap asking for a
// Secret the backup does not hold fails and is not created.
func TestRestoreAdditionalItemsThroughAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	file := extensionsFile(t, `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: dependencies
  taskQueue: e2e-dependencies
  restore: {resources: [configmaps, secrets], allowSecrets: true, includedNamespaces: [ext-ah-target]}
`)
	w := s.startWorker("--extensions", file)
	ext := &dependencies{gate: newGate(), seen: map[string]int{}}
	serveExtension(t, s, "e2e-dependencies", func(w sdkworker.Worker) { extension.RegisterRestore(w, ext) })

	kc := fastClient(t, s.cluster.Config())
	ensureNamespace(t, kc, "ext-ah")
	for _, name := range []string{"db-password", "unrelated"} {
		_, err := kc.CoreV1().Secrets("ext-ah").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: map[string]string{"password": name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for name, first := range map[string]string{"app": "db-password", "orphan": "not-in-backup", "plain": ""} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
		if first != "" {
			cm.Annotations = map[string]string{restoreFirstAnnotation: first, waitForAnnotation: "go-ahead"}
		}
		_, err := kc.CoreV1().ConfigMaps("ext-ah").Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s.backup(v1alpha1.BackupSpec{Name: "ext-ah-1", IncludedNamespaces: []string{"ext-ah"}})

	_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "ext-ah-r1", BackupName: "ext-ah-1",
		NamespaceMapping: map[string]string{"ext-ah": "ext-ah-target"}},
		Options: v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
	require.NoError(t, err)
	ext.awaitEntered(t, s, v1alpha1.RestoreWorkflowID("ext-ah-r1"))
	_, err = kc.CoreV1().ConfigMaps("ext-ah-target").Get(ctx, "app", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the ConfigMap waits for its Secret: %v", err)
	close(ext.release)
	// The step's heartbeat names the ConfigMap the item waits for once
	// its Secret is restored ahead and recorded.
	restore := v1alpha1.RestoreWorkflowID("ext-ah-r1")
	awaitPendingActivity(t, s, restore, restore, func(pa *workflowpb.PendingActivityInfo) bool {
		for _, p := range pa.GetHeartbeatDetails().GetPayloads() {
			if strings.Contains(string(p.GetData()), "ext-ah-target/go-ahead") {
				return true
			}
		}
		return false
	})
	_, err = kc.CoreV1().Secrets("ext-ah-target").Get(ctx, "db-password", metav1.GetOptions{})
	require.NoError(t, err, "restored ahead before its asker waits")
	w.kill()
	s.startWorker("--extensions", file)
	_, err = kc.CoreV1().ConfigMaps("ext-ah-target").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "go-ahead"}},
		metav1.CreateOptions{})
	require.NoError(t, err)

	v := s.waitRestore("ext-ah-r1", 2*time.Minute)
	require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "%+v", v.Status)
	assert.Greater(t, activityAttempt(t, s, v1alpha1.RestoreWorkflowID("ext-ah-r1"), applyActivity), int32(1),
		"the kill landed mid-step: the apply step ran again")

	secret, err := kc.CoreV1().Secrets("ext-ah-target").Get(ctx, "db-password", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "dependencies", secret.Annotations["e2e.cairn.io/restored-by"], "restored ahead with its extension's answer")
	app, err := kc.CoreV1().ConfigMaps("ext-ah-target").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	// The API server's resource versions are etcd's revisions: the
	// smaller one was written first.
	assert.Less(t, revision(t, secret.ResourceVersion), revision(t, app.ResourceVersion), "the Secret was created before the ConfigMap that asked")
	_, err = kc.CoreV1().ConfigMaps("ext-ah-target").Get(ctx, "orphan", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the ConfigMap whose Secret is nowhere is not created: %v", err)

	outcomes := s.outcomes("ext-ah-r1") // fails on an item listed twice
	assert.Equal(t, v1alpha1.ItemRestored, outcomes["secrets ext-ah-target/db-password"].Result)
	assert.Equal(t, v1alpha1.ItemRestored, outcomes["configmaps ext-ah-target/app"].Result)
	assert.Equal(t, v1alpha1.ItemFailed, outcomes["configmaps ext-ah-target/orphan"].Result)
	assert.Equal(t, "additional item secrets ext-ah-target/not-in-backup is not in this restore (not in the backup, or left out by its filters) and does not exist",
		outcomes["configmaps ext-ah-target/orphan"].Reason)
	ext.mu.Lock()
	defer ext.mu.Unlock()
	for _, item := range []string{"secrets db-password", "secrets unrelated", "configmaps app", "configmaps orphan", "configmaps plain"} {
		assert.Equal(t, 1, ext.seen[item], "%s sent to the extension %d times", item, ext.seen[item])
	}
}

func revision(t *testing.T, resourceVersion string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(resourceVersion, 10, 64)
	require.NoError(t, err)
	return n
}
