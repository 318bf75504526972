package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sample"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

var (
	buildExporter sync.Once
	exporterBin   string
	exporterErr   error
)

// widgetExporter builds the Go example extension
// (examples/extensions/widget-exporter) once per package run.
func widgetExporter(t *testing.T) string {
	t.Helper()
	buildExporter.Do(func() {
		exporterBin = filepath.Join(filepath.Dir(cairnBin), "widget-exporter")
		out, err := exec.Command("go", "build", "-o", exporterBin, "../../examples/extensions/widget-exporter").CombinedOutput()
		if err != nil {
			exporterErr = fmt.Errorf("build widget-exporter: %w\n%s", err, out)
		}
	})
	require.NoError(t, exporterErr)
	return exporterBin
}

// makeWidgets creates Widgets, each with a spec and a ConfigMap
// "<name>-config", and returns their UIDs by name.
func makeWidgets(t *testing.T, s *stack, namespace string, names ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, sample.DefineWidgets(ctx, s.cluster.Config()))
	kc := fastClient(t, s.cluster.Config())
	configs := map[string]map[string]string{}
	for _, n := range names {
		configs[n+"-config"] = nil
	}
	makeConfigMaps(t, kc, namespace, configs)
	dyn, err := dynamic.NewForConfig(s.cluster.Config())
	require.NoError(t, err)
	uids := map[string]string{}
	for _, n := range names {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "demo.cairn.io/v1", "kind": "Widget",
			"metadata": map[string]any{"name": n, "namespace": namespace},
			"spec":     map[string]any{"color": n, "notes": strings.Repeat("export me ", 40)},
		}}
		var created *unstructured.Unstructured
		// A CRD just established can take a moment to be served; the
		// bound is for a hang, not a verdict.
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			created, err = dyn.Resource(sample.WidgetResource).Namespace(namespace).Create(ctx, w, metav1.CreateOptions{})
			return err == nil, nil
		}), "create widget %s: %v", n, err)
		uids[n] = string(created.GetUID())
	}
	return uids
}

// awaitOperationChunk waits until an operation's activity heartbeated
// that it wrote a chunk; the backup or restore (runID) ending first fails
// the test.
func awaitOperationChunk(t *testing.T, s *stack, runID, operationWorkflow string) {
	t.Helper()
	awaitPendingActivity(t, s, runID, operationWorkflow, func(pa *workflowpb.PendingActivityInfo) bool {
		var p extension.OperationProgress
		return pa.GetHeartbeatDetails() != nil && converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil && p.Done > 0
	})
}

// TestExtensionOperations runs the Go example extension in a process of
// its own: for each Widget it starts an async export, asks for the
// Widget's ConfigMap, and to read the Widget again once exported.
//   - The extension's process and cairn's worker are killed (SIGKILL)
//     mid-export, while the Widget changes: the operation's retried
//     attempt (attempt 2 in its history) resumes after the chunk its
//     heartbeat recorded, the backup's retried step starts no operation
//     twice, every export is whole, and the backup completes holding each
//     Widget once, as it was after its export, and each ConfigMap once;
//     operations.json lists the operations.
//   - A restore into another namespace imports each restored Widget's
//     export, as an operation per Widget that the restore waits for; the
//     extension and cairn's worker are killed mid-import, and the imports
//     resume, none started twice, each whole.
//   - A restore that leaves the ConfigMaps out holds each Widget back
//     until its ConfigMap is there, as the extension answers; cairn's
//     worker is killed while they wait, and the Widgets are created once
//     the test makes the ConfigMaps.
//   - Deleting the backup deletes its exports, through the extension's
//     delete action; cairn's worker is killed while the extension
//     deletes, and the retried step makes no second call.
//   - A canceled backup cancels its running operations: the extension
//     removes its partial export.
//   - An operation that does not end within the backup's item operation
//     timeout fails: the backup is PartiallyFailed, naming the Widget.
func TestExtensionOperations(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	const ns, copyNS, waitNS, queue = "ext-ops", "ext-ops-copy", "ext-ops-wait", "e2e-widgets"
	extensions := extensionsFile(t, fmt.Sprintf(`apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: widgets
  taskQueue: %s
  timeout: 1m
  backup: {resources: [widgets.demo.cairn.io], includedNamespaces: [%[2]s]}
  restore: {resources: [widgets.demo.cairn.io], includedNamespaces: [%[3]s, %[4]s]}
  delete: {resources: [widgets.demo.cairn.io], includedNamespaces: [%[2]s]}
`, queue, ns, copyNS, waitNS))
	// Deletions take the worker's heartbeat timeout: a short one finds a
	// killed worker out soon.
	workerArgs := []string{"--extensions", extensions, "--heartbeat-timeout", "5s"}
	worker := s.startWorker(workerArgs...)
	exportDir, hold := t.TempDir(), filepath.Join(t.TempDir(), "hold")
	require.NoError(t, os.WriteFile(hold, nil, 0o600))
	args := []string{"--address", s.temporalAddr, "--task-queue", queue, "--export-dir", exportDir, "--hold-while", hold, "--chunk-pause", "20ms"}
	exporter := startBinary(t, "widget-exporter", widgetExporter(t), nil, args...)
	uids := makeWidgets(t, s, ns, "red", "green", "blue")
	opWorkflow := func(backup, name string) string {
		return v1alpha1.ExtensionOperationWorkflowID(backup, "widgets", "export/"+ns+"/"+name+"/"+uids[name])
	}
	heartbeat := v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}
	outer := t // the restarted extension serves the later subtests too

	t.Run("extension killed mid-operation", func(t *testing.T) {
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "ops-1", IncludedNamespaces: []string{ns}},
			Options: heartbeat})
		require.NoError(t, err)
		awaitOperationChunk(t, s, v1alpha1.BackupWorkflowID("ops-1"), opWorkflow("ops-1", "red"))
		awaitHeartbeat(t, s, v1alpha1.BackupWorkflowID("ops-1"), time.Now())
		stdout, stderr, code := s.cli("backup", "describe", "ops-1")
		require.Zero(t, code, stderr)
		assert.Contains(t, stdout, "WaitingForOperations")
		assert.Contains(t, stdout, "extension widgets, operation export/"+ns+"/", "describe names the operations waited on")
		exporter.kill()
		worker.kill()
		worker = s.startWorker(workerArgs...)
		dyn, err := dynamic.NewForConfig(s.cluster.Config())
		require.NoError(t, err)
		_, err = dyn.Resource(sample.WidgetResource).Namespace(ns).Patch(ctx, "red", "application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"exported":"yes"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		exporter = startBinary(outer, "widget-exporter-2", widgetExporter(t), nil, args...)
		require.NoError(t, os.Remove(hold))

		v := s.waitDone("ops-1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
		assert.Equal(t, &v1alpha1.OperationCounts{Total: 3, Completed: 3}, v.Status.ExtensionOperations)
		assert.Greater(t, activityAttempt(t, s, opWorkflow("ops-1", "red"), extension.BackupOperationV1), int32(1),
			"the kill landed mid-operation: its activity ran again")
		assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID("ops-1"), "RunOperations"), int32(1),
			"cairn's worker was killed while the backup waited: its step ran again")
		assert.Equal(t, 3, operationWorkflows(t, s, "ops-1"), "the retried step found the operations running, and started none again")
		log, err := os.ReadFile(exporter.logPath)
		require.NoError(t, err)
		assert.Contains(t, string(log), `"resumeAtChunk":`, "the retry resumed from the heartbeat")
		assert.NotContains(t, string(log), `"resumeAtChunk":0`, "the retry resumed after a chunk, not from the start")

		stored := tarballItems(t, s, "ops-1", "widgets.demo.cairn.io")
		counts := tarballCounts(t, s, "ops-1")
		for _, name := range []string{"red", "green", "blue"} {
			var w struct {
				Spec json.RawMessage `json:"spec"`
			}
			require.NoError(t, json.Unmarshal(stored[ns+"/"+name], &w), name)
			exported, err := os.ReadFile(filepath.Join(exportDir, "ops-1", ns+"_"+name+".json"))
			require.NoError(t, err, "the export of %s is whole", name)
			assert.JSONEq(t, string(w.Spec), string(exported), name)
			assert.Equal(t, 1, counts["widgets.demo.cairn.io"][ns+"/"+name], "%s stored once", name)
			assert.Equal(t, 1, counts["configmaps"][ns+"/"+name+"-config"], "the additional ConfigMap of %s stored once", name)
		}
		var red metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(stored[ns+"/red"], &red))
		assert.Equal(t, "yes", red.Labels["exported"], "the Widget is stored as read again after its operation")

		var ops v1alpha1.OperationsFile
		require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/ops-1/operations.json"), &ops))
		require.Len(t, ops.Operations, 3)
		for _, op := range ops.Operations {
			assert.Equal(t, v1alpha1.OperationKindExtension, op.Kind)
			assert.Equal(t, "widgets", op.Extension)
			assert.Equal(t, v1alpha1.OperationCompleted, op.Phase, "%+v", op)
			assert.Contains(t, op.Progress, "exported to ")
		}
		recordExtensionOperation(t, s, opWorkflow("ops-1", "red"), v1alpha1.BackupWorkflowID("ops-1"))
	})

	t.Run("restore: extension and worker killed mid-import", func(t *testing.T) {
		require.NoError(t, os.WriteFile(hold, nil, 0o600))
		_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{
			RestoreSpec: v1alpha1.RestoreSpec{Name: "ops-r1", BackupName: "ops-1", NamespaceMapping: map[string]string{ns: copyNS}},
			Options:     v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
		require.NoError(t, err)
		importWorkflow := func(name string) string {
			return v1alpha1.RestoreOperationWorkflowID("ops-r1", "widgets", "import/"+copyNS+"/"+name)
		}
		awaitOperationChunk(t, s, v1alpha1.RestoreWorkflowID("ops-r1"), importWorkflow("red"))
		awaitHeartbeat(t, s, v1alpha1.RestoreWorkflowID("ops-r1"), time.Now())
		stdout, stderr, code := s.cli("restore", "describe", "ops-r1")
		require.Zero(t, code, stderr)
		assert.Contains(t, stdout, "WaitingForOperations")
		assert.Contains(t, stdout, "extension widgets, operation import/"+copyNS+"/", "describe names the operations waited on")
		exporter.kill()
		worker.kill()
		worker = s.startWorker(workerArgs...)
		exporter = startBinary(outer, "widget-exporter-3", widgetExporter(t), nil, args...)
		require.NoError(t, os.Remove(hold))

		r := s.waitRestore("ops-r1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assert.Equal(t, &v1alpha1.OperationCounts{Total: 3, Completed: 3}, r.Status.ExtensionOperations)
		assert.Greater(t, activityAttempt(t, s, importWorkflow("red"), extension.RestoreOperationV1), int32(1),
			"the kill landed mid-import: its activity ran again")
		assert.Greater(t, activityAttempt(t, s, v1alpha1.RestoreWorkflowID("ops-r1"), "RunRestoreOperations"), int32(1),
			"cairn's worker was killed while the restore waited: its step ran again")
		assert.Equal(t, 3, operationWorkflows(t, s, "ops-r1"), "the retried step found the imports running, and started none again")
		for _, name := range []string{"red", "green", "blue"} {
			exported, err := os.ReadFile(filepath.Join(exportDir, "ops-1", ns+"_"+name+".json"))
			require.NoError(t, err)
			imported, err := os.ReadFile(filepath.Join(exportDir, ".imports", "ops-r1", copyNS+"_"+name+".json"))
			require.NoError(t, err, "the import of %s is whole", name)
			assert.Equal(t, string(exported), string(imported), "%s imported from the export of its backed-up namespace", name)
		}
		var ops v1alpha1.OperationsFile
		require.NoError(t, json.Unmarshal(readLocation(t, s, "restores/ops-r1/operations.json"), &ops))
		require.Len(t, ops.Operations, 3)
		for _, op := range ops.Operations {
			assert.Equal(t, v1alpha1.OperationCompleted, op.Phase, "%+v", op)
			assert.Equal(t, copyNS, op.Item.Namespace)
			assert.Contains(t, op.Progress, "imported into ")
		}
		recordHistory(t, s, v1alpha1.RestoreWorkflowID("ops-r1"), "restore_extension_operations.json")
	})

	t.Run("restore: Widgets wait for their ConfigMaps, through a worker kill", func(t *testing.T) {
		_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{
			RestoreSpec: v1alpha1.RestoreSpec{Name: "ops-r2", BackupName: "ops-1", NamespaceMapping: map[string]string{ns: waitNS},
				ExcludedResources: []string{"configmaps"}},
			Options: v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}}})
		require.NoError(t, err)
		restoreID := v1alpha1.RestoreWorkflowID("ops-r2")
		awaitPendingActivity(t, s, restoreID, restoreID, func(pa *workflowpb.PendingActivityInfo) bool {
			var beat struct {
				Waiting []v1alpha1.ExtensionWait `json:"waiting"`
			}
			if pa.GetHeartbeatDetails() == nil || converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &beat) != nil {
				return false
			}
			return len(beat.Waiting) > 0 && strings.HasPrefix(beat.Waiting[0].Ready, "configmaps "+waitNS+"/")
		})
		stdout, stderr, code := s.cli("restore", "describe", "ops-r2")
		require.Zero(t, code, stderr)
		assert.Contains(t, stdout, "extension widgets, for configmaps "+waitNS+"/", "describe names what a Widget waits for")
		dyn, err := dynamic.NewForConfig(s.cluster.Config())
		require.NoError(t, err)
		widgets, err := dyn.Resource(sample.WidgetResource).Namespace(waitNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, widgets.Items, "no Widget is created while its ConfigMap is missing")
		worker.kill()
		worker = s.startWorker(workerArgs...)
		makeConfigMaps(t, fastClient(t, s.cluster.Config()), waitNS, map[string]map[string]string{"red-config": nil, "green-config": nil, "blue-config": nil})

		r := s.waitRestore("ops-r2", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
		assert.Equal(t, 3, r.Status.Resources["widgets.demo.cairn.io"].Restored)
		assert.Greater(t, activityAttempt(t, s, restoreID, "ApplyResources"), int32(1),
			"cairn's worker was killed while the Widgets waited: their apply step ran again")
		widgets, err = dyn.Resource(sample.WidgetResource).Namespace(waitNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, widgets.Items, 3)
	})

	t.Run("delete, cairn's worker killed while the extension deletes", func(t *testing.T) {
		require.DirExists(t, filepath.Join(exportDir, "ops-1"))
		require.NoError(t, os.WriteFile(hold, nil, 0o600))
		since := time.Now().UTC()
		_, stderr, code := s.cli("backup", "delete", "ops-1")
		require.Zero(t, code, stderr)
		deletion := v1alpha1.DeleteWorkflowID("ops-1")
		// The deletion's calls: the backup's were made before it.
		calls := func(running bool) []string {
			q := fmt.Sprintf("%s = %q AND %s = %q", v1alpha1.SearchAttrKind.GetName(), v1alpha1.KindExtensionCall,
				v1alpha1.SearchAttrName.GetName(), "ops-1")
			listed, err := s.temporalC.ListActivities(ctx, client.ListActivitiesOptions{Query: q})
			require.NoError(t, err)
			var ids []string
			for a, err := range listed.Results {
				require.NoError(t, err)
				if a.ScheduleTime.After(since) && (!running || a.Status == enumspb.ACTIVITY_EXECUTION_STATUS_RUNNING) {
					ids = append(ids, a.ActivityID)
				}
			}
			return ids
		}
		var call string
		awaitWhileRunning(t, s, deletion, func() bool {
			if running := calls(true); len(running) == 1 {
				call = running[0]
			}
			return call != ""
		})
		awaitWhileRunning(t, s, deletion, func() bool {
			desc, err := s.temporalC.GetActivityHandle(client.GetActivityHandleOptions{ActivityID: call}).Describe(ctx, client.DescribeActivityOptions{})
			return err == nil && desc.RawResponse.GetInfo().GetRunState() == enumspb.PENDING_ACTIVITY_STATE_STARTED
		})
		require.DirExists(t, filepath.Join(exportDir, "ops-1"), "held: the extension has deleted nothing yet")
		worker.kill()
		worker = s.startWorker(workerArgs...)
		require.NoError(t, os.Remove(hold))

		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		require.NoError(t, s.temporalC.GetWorkflow(wctx, deletion, "").Get(wctx, nil))
		assert.NoDirExists(t, filepath.Join(exportDir, "ops-1"), "the extension deleted the backup's exports with it")
		assert.Empty(t, backupObjects(t, s, "ops-1"))
		assert.Greater(t, activityAttempt(t, s, deletion, "RunDeleteActions"), int32(1),
			"cairn's worker was killed while the deletion waited on its extension: the step ran again")
		assert.Len(t, calls(false), 1, "the retried step found the call running, and made none again")
	})

	t.Run("cancel", func(t *testing.T) {
		require.NoError(t, os.WriteFile(hold, nil, 0o600))
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "ops-2", IncludedNamespaces: []string{ns}},
			Options: heartbeat})
		require.NoError(t, err)
		awaitOperationChunk(t, s, v1alpha1.BackupWorkflowID("ops-2"), opWorkflow("ops-2", "green"))
		_, err = s.starter.CancelBackup(ctx, "ops-2")
		require.NoError(t, err)
		v := s.waitDone("ops-2", 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCanceled, v.Phase, "%+v", v.Status)
		for _, name := range []string{"red", "green", "blue"} {
			run := s.temporalC.GetWorkflow(ctx, opWorkflow("ops-2", name), "")
			assert.Error(t, run.Get(ctx, nil), "the operation of %s ended with the backup", name)
			desc, err := s.temporalC.DescribeWorkflowExecution(ctx, opWorkflow("ops-2", name), "")
			require.NoError(t, err)
			assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, desc.GetWorkflowExecutionInfo().GetStatus(), name)
			assert.NoFileExists(t, filepath.Join(exportDir, "ops-2", ns+"_"+name+".json.part"), "a canceled export is removed")
		}
	})

	t.Run("timeout", func(t *testing.T) {
		require.FileExists(t, hold)
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "ops-3", IncludedNamespaces: []string{ns},
			ItemOperationTimeout: &metav1.Duration{Duration: 3 * time.Second}}, Options: heartbeat})
		require.NoError(t, err)
		v := s.waitDone("ops-3", 2*time.Minute)
		require.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase, "%+v", v.Status)
		assert.Equal(t, &v1alpha1.OperationCounts{Total: 3, Failed: 3}, v.Status.ExtensionOperations)
		assert.Contains(t, v.Status.FailureReason, "3 of 3 extension operations did not complete")
		var results v1alpha1.BackupResults
		require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/ops-3/results.json"), &results))
		var named []string
		for _, e := range results.Errors {
			if e.Resource == "widgets.demo.cairn.io" {
				named = append(named, e.Name)
				assert.Contains(t, e.Message, "extension widgets: operation did not end within 3s")
			}
		}
		assert.ElementsMatch(t, []string{"red", "green", "blue"}, named)
	})
}

// recordExtensionOperation records an operation retried after its
// extension was killed, and the backup that waited for it, for the replay
// test (CAIRN_RECORD_HISTORY=1).
func recordExtensionOperation(t *testing.T, s *stack, operation, backup string) {
	t.Helper()
	if os.Getenv("CAIRN_RECORD_HISTORY") == "1" {
		recordHistory(t, s, operation, "extension_operation_retried.json")
		recordHistory(t, s, backup, "backup_extension_operations.json")
	}
}

// operationWorkflows counts the operation workflows of a backup or
// restore.
func operationWorkflows(t *testing.T, s *stack, run string) int {
	t.Helper()
	listed, err := s.temporalC.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default",
		Query: fmt.Sprintf("%s = %q AND %s = %q", v1alpha1.SearchAttrKind.GetName(), v1alpha1.KindExtensionOperation,
			v1alpha1.SearchAttrName.GetName(), run)})
	require.NoError(t, err)
	return len(listed.GetExecutions())
}
