package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
)

// fsBackupOfWeb is what fileSystemRestoreOnTheNode restores: backup
// fsb-2 of namespace fsb, whose Deployment's pod web had its emptyDir
// cache and local volume files copied, and pod api its emptyDir keep.
type fsBackupOfWeb struct {
	pod   string // web's pod, as backed up
	cache v1alpha1.Operation
	// cacheFiles are the cache's files of largeFileSize.
	cacheFiles int
	files      map[string]string // the local volume's digest
	keep       map[string]string // api's keep's digest
	spool      map[string]string // StatefulSet queue's pod's spool's digest
}

// fileSystemRestoreOnTheNode writes the copies of backup fsb-2 back into
// the restored pods, in namespace fsb, which was deleted: each restored
// pod waits in its restore-wait init container while a data mover on the
// node writes its volumes; SIGKILLed mid-restore, a second one carries
// on. The pods then start with their volumes byte-identical, web's
// adopted by its restored Deployment and queue-0 by its StatefulSet. A
// copy larger than its new volume fails for good and its pod is told so.
// A worker killed while a pod waits to be scheduled leaves one data mover
// per volume, and a restore canceled mid-data tells its pod why, in the
// pod's status and log, and leaves no data mover. w is the worker, which
// podWorker starts again; it returns the one running.
func fileSystemRestoreOnTheNode(t *testing.T, s *stack, b fsBackupOfWeb, w *proc, podWorker func() *proc) *proc {
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	const into = "fsb"
	// The old volume, Released, keeps its data: the claim gets this one.
	filesDir := freeLocalVolume(t, kc, "fsb-files-restored")
	_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{
		RestoreSpec: v1alpha1.RestoreSpec{Name: "fsr-1", BackupName: "fsb-2"},
		Options:     v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}}})
	require.NoError(t, err)
	cacheID := v1alpha1.PodVolumeRestoreWorkflowID("fsr-1", into, b.pod, "cache")
	written := waitWrittenFiles(t, kc, into, b.pod, "cache", b.cacheFiles*2/5)
	assertWaitsForData(t, kc, into, b.pod)
	pid := podDataMoverPIDOf(t, "fsr-1", into, b.pod, "cache")
	t.Logf("SIGKILL pod volume restore data mover %d with %d of %d large files written", pid, written, b.cacheFiles)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	r := s.waitRestore("fsr-1", 4*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)

	vols := map[string]v1alpha1.VolumeRestoreStatus{}
	for _, v := range r.Status.PodVolumes {
		vols[v.ID] = v
	}
	cacheKey, filesKey, keepKey := v1alpha1.PodVolumeRestoreID(into, b.pod, "cache"), v1alpha1.PodVolumeRestoreID(into, b.pod, "files"),
		v1alpha1.PodVolumeRestoreID(into, "api", "keep")
	assert.ElementsMatch(t, []string{cacheKey, filesKey, keepKey, v1alpha1.PodVolumeRestoreID(into, "queue-0", "spool")}, keysOf(vols))
	for _, v := range vols {
		require.Equal(t, v1alpha1.OperationCompleted, v.Phase, "%+v", v)
		require.NotNil(t, v.Download, "%+v", v)
		assert.Equal(t, sandbox.NodeName, v.Download.Node)
	}
	cache := vols[cacheKey]
	assert.Equal(t, 2, cache.Download.Attempts, "a second data mover finished the restore")
	assert.Positive(t, cache.Download.SkippedBytes, "the second data mover skipped what the first wrote")
	assert.Equal(t, 2, activityAttempts(t, s, cacheID, restoreVolumeDataActivity), "the kill landed mid-restore")

	// The pods start with their data, byte for byte.
	waitPodRunning(t, s, into, b.pod)
	pod, err := kc.CoreV1().Pods(into).Get(ctx, b.pod, metav1.GetOptions{})
	require.NoError(t, err)
	gotCache, err := datatree.Digest(emptyDirOnNode(pod, "cache"))
	require.NoError(t, err)
	assert.Empty(t, datatree.Diff(s.restoredDigest(t, b.cache.Upload.SnapshotID), gotCache, 10), "the emptyDir holds its copy")
	gotFiles, err := datatree.Digest(filesDir)
	require.NoError(t, err)
	assert.Empty(t, datatree.Diff(b.files, gotFiles, 10), "the new local volume holds the copy of the old")
	waitPodRunning(t, s, into, "api")
	api, err := kc.CoreV1().Pods(into).Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err)
	gotKeep, err := datatree.Digest(emptyDirOnNode(api, "keep"))
	require.NoError(t, err)
	assert.Equal(t, b.keep, gotKeep)
	logs, err := kc.CoreV1().Pods(into).GetLogs(b.pod, &corev1.PodLogOptions{Container: v1alpha1.RestoreWaitContainer}).DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(logs), "Every volume is restored")
	waitAdopted(t, kc, into, b.pod)
	assertStatefulSetPodRestored(t, kc, into, b.spool)
	recordHistory(t, s, cacheID, "pod_volume_restore_watches_start.json")
	assertNoDataMoverPods(t, s)

	restoreIntoTooSmallVolume(t, s, kc)
	return workerKilledThenRestoreCanceled(t, s, kc, b, w, podWorker)
}

// restoreIntoTooSmallVolume restores pod api alone into fsb-f, its keep
// made a 4 KiB memory volume by a resource modifier: the copy (MiBs)
// fails for good before a byte is written, naming both sizes, and the
// pod's init container ends with that reason instead of waiting.
func restoreIntoTooSmallVolume(t *testing.T, s *stack, kc kubernetes.Interface) {
	ctx := context.Background()
	const into = "fsb-f"
	modifiers := "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods, resourceNameRegex: '^api$'}\n" +
		"  strategicPatches:\n  - patchData: '{\"spec\":{\"volumes\":[{\"name\":\"keep\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"4Ki\"}}]}}'\n"
	_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{
		Name: "fsr-3", BackupName: "fsb-2", NamespaceMapping: map[string]string{"fsb": into},
		// Not web's pod, whose claims this restore does not make, nor
		// the StatefulSet's.
		IncludedResources: []string{"pods", "configmaps"}, LabelSelector: "app notin (web,queue)",
		ResourceModifiers: &v1alpha1.DocumentRef{Inline: modifiers}}})
	require.NoError(t, err)
	r := s.waitRestore("fsr-3", 4*time.Minute)
	assert.Equal(t, v1alpha1.PhasePartiallyFailed, r.Phase, "reason: %s", r.Status.FailureReason)
	require.Len(t, r.Status.PodVolumes, 1, "api's keep only: %+v", r.Status.PodVolumes)
	keep := r.Status.PodVolumes[0]
	assert.Equal(t, v1alpha1.OperationFailed, keep.Phase, "%+v", keep)
	assert.Contains(t, keep.Error, v1alpha1.ErrTypeNoSpace)
	// keep's logical size: its files and a sparse one.
	assert.Regexp(t, `needs [0-9.]+ MiB more \([0-9.]+ MiB in all\), and its file system on this node has 4.0 KiB free`, keep.Error)
	assert.Equal(t, 1, activityAttempts(t, s, keep.WorkflowID, restoreVolumeDataActivity), "no retry can make room")

	ended := waitRestoreWaitEnded(t, kc, into, "api")
	assert.Equal(t, int32(1), ended.ExitCode)
	assert.Contains(t, ended.Message, "free", "the pod's status says why")
	pod, err := kc.CoreV1().Pods(into).Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err)
	keepDir := emptyDirOnNode(pod, "keep")
	written, err := datatree.Bytes(keepDir)
	require.NoError(t, err)
	assert.Zero(t, written, "nothing was written")
	assertNoDataMoverPods(t, s)
}

// assertStatefulSetPodRestored checks that the restored StatefulSet
// queue adopted the pod restored before it, which waited for its data and
// started with it, rather than replacing it with one of its template.
func assertStatefulSetPodRestored(t *testing.T, kc kubernetes.Interface, ns string, spool map[string]string) {
	t.Helper()
	pod := waitPodWhere(t, kc, ns, podNamed("queue-0"), "the restored StatefulSet did not adopt "+ns+"/queue-0 running",
		func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && metav1.GetControllerOf(p) != nil
		})
	owner := metav1.GetControllerOf(pod)
	assert.Equal(t, "StatefulSet", owner.Kind)
	assert.Equal(t, "queue", owner.Name)
	ended := restoreWaitEnded(pod)
	require.NotNil(t, ended, "the running queue-0 is the pod that waited for its data: %+v", pod.Status.InitContainerStatuses)
	assert.Equal(t, int32(0), ended.ExitCode)
	got, err := datatree.Digest(emptyDirOnNode(pod, "spool"))
	require.NoError(t, err)
	assert.Equal(t, spool, got, "queue-0 runs with its spool's copy")
}

// workerKilledThenRestoreCanceled restores again, into fsb-c, where the
// local volume for web's claim comes only after the worker is killed
// while the pod waits to be scheduled: the wait resumes in a new worker,
// and one data mover writes the cache. The restore is then canceled
// while it does (its data mover held still until the cancel is
// requested): the pod's init container ends with the reason instead of
// waiting, and no data mover is left.
func workerKilledThenRestoreCanceled(t *testing.T, s *stack, kc kubernetes.Interface, b fsBackupOfWeb, w *proc, podWorker func() *proc) *proc {
	ctx := context.Background()
	const into = "fsb-c"
	_, err := s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{
		RestoreSpec: v1alpha1.RestoreSpec{Name: "fsr-2", BackupName: "fsb-2", NamespaceMapping: map[string]string{"fsb": into}},
		Options:     v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}}})
	require.NoError(t, err)
	cacheID := v1alpha1.PodVolumeRestoreWorkflowID("fsr-2", into, b.pod, "cache")
	waitAwaitingPod(t, s, cacheID, "is not scheduled yet")
	w.kill()
	w = podWorker()
	freeLocalVolume(t, kc, into+"-files")
	waitWrittenFiles(t, kc, into, b.pod, "cache", b.cacheFiles/5)
	assert.GreaterOrEqual(t, activityAttempt(t, s, cacheID, awaitRestoredPodActivity), int32(2), "the kill landed mid-wait")
	pid := podDataMoverPIDOf(t, "fsr-2", into, b.pod, "cache")
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.Less(t, writtenFiles(t, kc, into, b.pod, "cache"), b.cacheFiles, "the data mover is stopped mid-restore")
	_, err = s.starter.CancelRestore(ctx, "fsr-2")
	require.NoError(t, err)
	waitCancelRequested(t, s, cacheID)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	r := s.waitRestore("fsr-2", 4*time.Minute)
	assert.Equal(t, v1alpha1.PhaseCanceled, r.Phase)

	ended := waitRestoreWaitEnded(t, kc, into, b.pod)
	assert.Equal(t, int32(1), ended.ExitCode)
	assert.Contains(t, ended.Message, "restore fsr-2: canceled", "the pod's status says why")
	// Whichever of its volumes was told first.
	waitRestoreWaitLog(t, kc, into, b.pod, regexp.MustCompile(`Volume (cache|files) will not be restored: restore fsr-2: canceled`))
	assert.Equal(t, 1, activityAttempts(t, s, cacheID, restoreVolumeDataActivity), "one data mover wrote the cache")
	assertNoDataMoverPods(t, s)
	return w
}

// waitAwaitingPod waits until a pod volume's restore heartbeats that it
// waits for its pod, saying what.
func waitAwaitingPod(t *testing.T, s *stack, workflowID, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var said string
	for {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err == nil {
			for _, pa := range desc.GetPendingActivities() {
				if pa.GetActivityType().GetName() == awaitRestoredPodActivity && pa.GetHeartbeatDetails() != nil &&
					converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &said) == nil && strings.Contains(said, what) {
					return
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "%s does not wait with %q (last %q)", workflowID, what, said)
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRestoreWaitEnded waits until the restored pod's restore-wait init
// container has ended, and returns how.
func waitRestoreWaitEnded(t *testing.T, kc kubernetes.Interface, ns, name string) *corev1.ContainerStateTerminated {
	t.Helper()
	pod := waitPodWhere(t, kc, ns, podNamed(name), "the init container of "+ns+"/"+name+" still waits",
		func(p *corev1.Pod) bool { return restoreWaitEnded(p) != nil })
	return restoreWaitEnded(pod)
}

// waitRestoreWaitLog waits until the log of the pod's restore-wait init
// container says what pattern matches. The kubelet starts a failed init
// container again: the instance that ended may be the previous one by
// the time its log is read, and the new one may not have said it yet.
func waitRestoreWaitLog(t *testing.T, kc kubernetes.Interface, ns, name string, pattern *regexp.Regexp) {
	t.Helper()
	var said []string // the last look's logs, for the failure message
	until(t, func() bool {
		said = said[:0]
		for _, previous := range []bool{false, true} {
			opts := &corev1.PodLogOptions{Container: v1alpha1.RestoreWaitContainer, Previous: previous}
			logs, err := kc.CoreV1().Pods(ns).GetLogs(name, opts).DoRaw(context.Background())
			if err == nil && pattern.Match(logs) {
				return true
			}
			said = append(said, fmt.Sprintf("previous=%t: %q (error: %v)", previous, logs, err))
		}
		return false
	}, 2*time.Minute, time.Second, "no log of %s/%s's %s says %s: %v", ns, name, v1alpha1.RestoreWaitContainer, pattern, &said)
}

// restoreWaitEnded is how the pod's restore-wait init container last
// ended, nil while it has not.
func restoreWaitEnded(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	i := slices.IndexFunc(pod.Status.InitContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Name == v1alpha1.RestoreWaitContainer })
	if i < 0 {
		return nil
	}
	st := pod.Status.InitContainerStatuses[i]
	if st.State.Terminated != nil {
		return st.State.Terminated
	}
	return st.LastTerminationState.Terminated
}

// assertWaitsForData checks that the restored pod runs its restore-wait
// init container, and not its own containers.
func assertWaitsForData(t *testing.T, kc kubernetes.Interface, ns, name string) {
	t.Helper()
	pod, err := kc.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pod.Spec.InitContainers)
	assert.Equal(t, v1alpha1.RestoreWaitContainer, pod.Spec.InitContainers[0].Name, "the restore-wait init container comes first")
	assert.Equal(t, "fsr-1", pod.Annotations[v1alpha1.RestoreWaitAnnotation])
	assert.NotEqual(t, corev1.PodRunning, pod.Status.Phase, "the pod does not run before its data is back")
}

// waitAdopted waits until the restored pod is owned by a ReplicaSet of
// its restored Deployment, which made no pod of its own.
func waitAdopted(t *testing.T, kc kubernetes.Interface, ns, name string) {
	t.Helper()
	waitPodWhere(t, kc, ns, podNamed(name), "pod "+ns+"/"+name+" has no ReplicaSet owner", func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.Kind == "ReplicaSet"
	})
	pods, err := kc.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1, "the Deployment adopted the restored pod instead of making another")
}

// largeFileSize is the size of the cache's large files.
const largeFileSize = 2 << 20

// waitWrittenFiles waits until the restore has written n of the volume's
// large files whole into the restored pod's directory, as the node
// keeps it on this machine: the data itself, not a heartbeat about it,
// which comes only every few seconds. It returns how many it saw.
func waitWrittenFiles(t *testing.T, kc kubernetes.Interface, ns, pod, volume string, n int) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		seen := writtenFiles(t, kc, ns, pod, volume)
		if seen >= n {
			return seen
		}
		require.True(t, time.Now().Before(deadline), "%s/%s: %d of the %d large files of %s written", ns, pod, seen, n, volume)
		time.Sleep(50 * time.Millisecond)
	}
}

// writtenFiles counts the large files of the restored pod's volume that
// are written whole.
func writtenFiles(t *testing.T, kc kubernetes.Interface, ns, pod, volume string) int {
	t.Helper()
	p, err := kc.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	dir := emptyDirOnNode(p, volume)
	seen := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			// Written whole: its blocks hold all of it (the data mover
			// sizes a file before it writes; the data has no holes).
			if info, err := d.Info(); err == nil && info.Size() == largeFileSize {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Blocks*512 >= largeFileSize {
					seen++
				}
			}
		}
		return nil
	})
	return seen
}

// waitCancelRequested waits until a workflow's history records that its
// cancellation was requested.
func waitCancelRequested(t *testing.T, s *stack, workflowID string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, e := range runHistory(t, s, workflowID) {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "%s was not asked to cancel", workflowID)
		time.Sleep(200 * time.Millisecond)
	}
}

// podDataMoverPIDOf is the process of the data mover pod that serves a
// restore's pod volume, as the node's host sees it.
func podDataMoverPIDOf(t *testing.T, restore, ns, pod, volume string) int {
	t.Helper()
	queue := v1alpha1.DataMoverTaskQueue(v1alpha1.RestoreOwner(restore),
		v1alpha1.Volume{Namespace: ns, PodVolume: &v1alpha1.PodVolume{Pod: pod, Volume: volume}})
	return processMatching(t, func(cmdline string) bool {
		return strings.HasPrefix(cmdline, "/cairn\x00datamover\x00") && strings.Contains(cmdline, "\x00"+queue+"\x00")
	}, "serving "+queue)
}
