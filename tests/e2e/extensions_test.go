package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

// annotator is a backup extension written against pkg/extension: it
// annotates each item it is sent, fails the one named refuse-me, answers
// for rename-me with another object, asks for additional items with the
// one named annotated, and counts what it saw.
type annotator struct {
	mu   sync.Mutex
	seen map[string]int // "resource ns/name"
	// additional are asked for with the item named annotated.
	additional []extension.ObjectRef
}

func (a *annotator) BackupItems(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	if req.Extension != "annotate" {
		return nil, temporal.NewNonRetryableApplicationError("called as "+req.Extension, extension.ErrTypeRefused, nil)
	}
	resp := &extension.BackupItemsResponse{}
	for _, raw := range req.Items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		meta := obj["metadata"].(map[string]any)
		name := meta["name"].(string)
		a.mu.Lock()
		a.seen[fmt.Sprintf("%s %s/%s", req.Resource.Resource, meta["namespace"], name)]++
		a.mu.Unlock()
		switch name {
		case "refuse-me":
			resp.Items = append(resp.Items, extension.BackupItemAnswer{Error: "not this one"})
			continue
		case "rename-me":
			meta["name"] = "renamed"
		default:
			annotations, _ := meta["annotations"].(map[string]any)
			if annotations == nil {
				annotations = map[string]any{}
			}
			annotations["example.com/seen-by"] = req.Extension
			meta["annotations"] = annotations
		}
		out, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		ans := extension.BackupItemAnswer{Item: out}
		if name == "annotated" {
			ans.AdditionalItems = a.additional
		}
		resp.Items = append(resp.Items, ans)
	}
	return resp, nil
}

// TestBackupExtensions: a backup calls the extensions registered with its
// worker, in order, for the items their selectors pick, through
// activities on the extensions' own task queues. The
// stored items are those the extension answered with; an item it
// refuses, one it answers with another object for, and those of an
// extension nobody serves (after its timeout) are left out and named in
// the backup's errors (PartiallyFailed); a Secret is never sent to an
// extension that did not ask for Secrets; unselected items are stored as
// listed. The additional items asked for are stored once, also from a
// namespace the backup does not include; one that does not exist is a
// warning.
func TestBackupExtensions(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	const ns = "ext-backup"
	doc := fmt.Sprintf(`apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: annotate
  taskQueue: e2e-annotate
  backup:
    resources: ["*"]
    includedNamespaces: [%[1]s]
    labelSelector: ext=yes
- name: nobody-home
  taskQueue: e2e-nobody-home
  timeout: 2s
  backup:
    resources: [configmaps]
    includedNamespaces: [%[1]s]
    labelSelector: down=yes
`, ns)
	s.startWorker("--extensions", extensionsFile(t, doc))
	ext := &annotator{seen: map[string]int{}, additional: []extension.ObjectRef{
		{Resource: "configmaps", Namespace: "ext-other", Name: "extra"},
		{Resource: "configmaps", Namespace: ns, Name: "plain"},
		{Resource: "configmaps", Namespace: "ext-other", Name: "ghost"},
	}}
	serveExtension(t, s, "e2e-annotate", func(w sdkworker.Worker) { extension.RegisterBackup(w, ext) })

	kc := fastClient(t, s.cluster.Config())
	makeConfigMaps(t, kc, ns, map[string]map[string]string{
		"plain": nil, "annotated": {"ext": "yes"}, "refuse-me": {"ext": "yes"}, "rename-me": {"ext": "yes"}, "unserved": {"down": "yes"},
	})
	makeConfigMaps(t, kc, "ext-other", map[string]map[string]string{"extra": nil})
	_, err := kc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Labels: map[string]string{"ext": "yes"}},
		StringData: map[string]string{"token": "s3cret"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "ext-1", IncludedNamespaces: []string{ns}}})
	require.NoError(t, err)
	v := s.waitDone("ext-1", 2*time.Minute)
	require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "%+v", v.Status)

	stored := tarballItems(t, s, "ext-1", "configmaps")
	for _, key := range []string{ns + "/plain", ns + "/annotated", "ext-other/extra"} {
		assert.Contains(t, stored, key)
		assert.Equal(t, 1, tarballCounts(t, s, "ext-1")["configmaps"][key], "%s stored once", key)
	}
	for _, name := range []string{"refuse-me", "rename-me", "renamed", "unserved"} {
		assert.NotContains(t, stored, ns+"/"+name, "an item an extension failed is left out")
	}
	assert.Equal(t, "annotate", annotationOf(t, stored[ns+"/annotated"], "example.com/seen-by"), "the item stored is the extension's answer")
	assert.Empty(t, annotationOf(t, stored[ns+"/plain"], "example.com/seen-by"), "an item no selector picks is stored as listed")
	assert.Contains(t, keysOf(tarballItems(t, s, "ext-1", "secrets")), ns+"/token", "a Secret is backed up, without the extension")
	assert.Equal(t, map[string]int{
		"configmaps " + ns + "/annotated": 1, "configmaps " + ns + "/refuse-me": 1, "configmaps " + ns + "/rename-me": 1,
	}, ext.seen, "each selected item is sent once, and no Secret")

	var results v1alpha1.BackupResults
	require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/ext-1/results.json"), &results))
	var errs []string
	for _, e := range results.Errors {
		errs = append(errs, e.Message)
	}
	joined := strings.Join(errs, "\n")
	assert.Contains(t, joined, ns+"/refuse-me: extension annotate: not this one")
	assert.Contains(t, joined, ns+"/rename-me: extension annotate: answered with ConfigMap "+ns+"/renamed, another object")
	assert.Contains(t, joined, ns+"/unserved: extension nobody-home: did not answer cairn.extension.v1.BackupItems within 2s: is a worker polling task queue e2e-nobody-home?")
	var warnings []string
	for _, w := range results.Warnings {
		warnings = append(warnings, w.Message)
	}
	assert.Contains(t, strings.Join(warnings, "\n"), "extensions asked for configmaps ext-other/ghost, which does not exist")

	recordExtensionCall(t, s)
}

// tarballItems reads a backup's objects of one group-resource, keyed
// "namespace/name".
func tarballItems(t *testing.T, s *stack, backup, groupResource string) map[string][]byte {
	t.Helper()
	loc, err := s.locations.Open(context.Background(), s.location)
	require.NoError(t, err)
	defer loc.Close()
	r, err := loc.NewReader(context.Background(), location.Backup(backup).Resources())
	require.NoError(t, err)
	defer r.Close()
	out := map[string][]byte{}
	_, err = tarball.Walk(r, tarball.Limits{}, func(e tarball.Entry) error {
		if e.Version == "" && e.GroupResource == groupResource {
			out[e.Namespace+"/"+e.Name] = append([]byte(nil), e.Data...)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func annotationOf(t *testing.T, obj []byte, key string) string {
	t.Helper()
	var o metav1.PartialObjectMetadata
	require.NoError(t, json.Unmarshal(obj, &o))
	return o.Annotations[key]
}

// recordExtensionCall records a completed ExtensionCall for the replay
// test (CAIRN_RECORD_HISTORY=1).
func recordExtensionCall(t *testing.T, s *stack) {
	t.Helper()
	if os.Getenv("CAIRN_RECORD_HISTORY") != "1" {
		return
	}
	resp, err := s.temporalC.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default",
		Query: fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = 'Completed'", v1alpha1.ExtensionCallWorkflowName), PageSize: 1})
	require.NoError(t, err)
	if len(resp.GetExecutions()) == 0 {
		// Calls run as standalone activities; the workflow is for servers
		// without them, and its recorded history stays as it is.
		t.Log("no ExtensionCall workflow ran: extension_call_completed.json is kept")
		return
	}
	recordHistory(t, s, resp.GetExecutions()[0].GetExecution().GetWorkflowId(), "extension_call_completed.json")
}

// gatedAnnotator is an annotator whose first call waits at a gate: the
// test kills cairn's worker while the backup waits on that call.
type gatedAnnotator struct {
	annotator
	*gate
}

func (g *gatedAnnotator) BackupItems(ctx context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	if err := g.hold(ctx); err != nil {
		return nil, err
	}
	return g.annotator.BackupItems(ctx, req)
}

// TestBackupExtensionSurvivesAWorkerKill: while a backup's collect step
// waits on an extension's call, `backup describe` names the extension, and
// cairn's worker is killed (SIGKILL).
// The retried step (attempt 2 in the history) finds the call already
// made instead of making it again: the extension sees each item once, and
// the backup completes with each item stored once, as the extension
// answered.
func TestBackupExtensionSurvivesAWorkerKill(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	const ns = "ext-kill"
	doc := fmt.Sprintf(`apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: annotate
  taskQueue: e2e-annotate-kill
  backup: {resources: [configmaps], includedNamespaces: [%s]}
`, ns)
	file := extensionsFile(t, doc)
	w := s.startWorker("--extensions", file)
	ext := &gatedAnnotator{annotator: annotator{seen: map[string]int{}}, gate: newGate()}
	serveExtension(t, s, "e2e-annotate-kill", func(w sdkworker.Worker) { extension.RegisterBackup(w, ext) })

	kc := fastClient(t, s.cluster.Config())
	names := map[string]map[string]string{}
	for i := range 20 {
		names[fmt.Sprintf("cm-%02d", i)] = nil
	}
	makeConfigMaps(t, kc, ns, names)

	_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "ext-kill-1", IncludedNamespaces: []string{ns}},
		Options: v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
	require.NoError(t, err)
	ext.awaitEntered(t, s, v1alpha1.BackupWorkflowID("ext-kill-1"))
	awaitHeartbeat(t, s, v1alpha1.BackupWorkflowID("ext-kill-1"), time.Now())
	stdout, stderr, code := s.cli("backup", "describe", "ext-kill-1")
	require.Zero(t, code, stderr)
	assert.Contains(t, stdout, "extension annotate (task queue e2e-annotate-kill)", "backup describe names the extension the backup waits on")
	w.kill()
	s.startWorker("--extensions", file)
	close(ext.release)

	v := s.waitDone("ext-kill-1", 2*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID("ext-kill-1"), collectActivity), int32(1),
		"the kill landed mid-step: the collect step ran again")
	require.Len(t, ext.seen, 20, "every ConfigMap")
	for item, n := range ext.seen {
		assert.Equal(t, 1, n, "%s sent to the extension %d times", item, n)
	}
	counts := tarballCounts(t, s, "ext-kill-1")
	stored := tarballItems(t, s, "ext-kill-1", "configmaps")
	for i := range 20 {
		key := fmt.Sprintf("%s/cm-%02d", ns, i)
		assert.Equal(t, 1, counts["configmaps"][key], key)
		assert.Equal(t, "annotate", annotationOf(t, stored[key], "example.com/seen-by"), key)
	}
}
