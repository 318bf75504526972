package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/starter"
)

// TestHooksOnRealPods runs backup and restore hooks in pods on the
// sandbox's node, from Velero's annotations and from the spec, through
// the API server's exec.
func TestHooksOnRealPods(t *testing.T) {
	t.Parallel()
	s := newNodeStack(t)
	m := &moverStack{stack: s, stateDir: filepath.Join(t.TempDir(), "datamovers")}
	w := m.startMoverWorker()
	ctx := context.Background()

	t.Run("the snapshot and the moved data hold what the pre hook wrote; the live volume does not", func(t *testing.T) {
		hookPod(t, s, "hk-consistent", map[string]string{
			"pre.hook.backup.velero.io/command":  `["/bin/sh", "-c", "echo frozen > /data/marker && sync"]`,
			"post.hook.backup.velero.io/command": `["/bin/sh", "-c", "rm /data/marker"]`,
		})
		_, err := s.starter.CreateBackup(ctx, moveRequest("hk-consistent-1", "hk-consistent"))
		require.NoError(t, err)
		v := s.waitDone("hk-consistent-1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		require.Len(t, v.Status.Hooks, 2, "%+v", v.Status.Hooks)
		for _, r := range v.Status.Hooks {
			assert.Equal(t, 0, r.ExitCode, "%+v", r)
			assert.True(t, strings.HasSuffix(r.Source, ".hook.backup.velero.io/"), r.Source)
		}
		op := operation(t, v.Status, "hk-consistent", "data")
		snap, err := os.ReadFile(filepath.Join(csistate.SnapshotDirForHandle(s.cluster.CSIStateDir(), op.Snapshot.Handle), "marker"))
		require.NoError(t, err, "the snapshot holds the marker")
		assert.Equal(t, "frozen\n", string(snap))
		assert.Contains(t, s.restoredDigest(t, uploadOf(t, v.Status, "hk-consistent", "data").SnapshotID), "marker",
			"the moved data holds the marker")
		assert.NotContains(t, readVolume(t, s, "hk-consistent", "data"), "marker", "the post hook removed it from the live volume")
	})

	t.Run("a failed pre hook with onError Fail keeps the pod's volume from the snapshot; its post hook runs", func(t *testing.T) {
		hookPod(t, s, "hk-fail", map[string]string{
			"pre.hook.backup.velero.io/command":  `["/bin/sh", "-c", "echo cannot freeze the tables >&2; exit 3"]`,
			"post.hook.backup.velero.io/command": `["/bin/sh", "-c", "touch /data/post-ran"]`,
		})
		v := snapshotBackup(t, s, "hk-fail-1", "hk-fail", nil)
		assert.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase)
		assert.Contains(t, v.Status.FailureReason, "pre hook of pod hk-fail/db (pre.hook.backup.velero.io/) failed: exit code 3: cannot freeze the tables")
		op := operation(t, v.Status, "hk-fail", "data")
		assert.Equal(t, v1alpha1.OperationFailed, op.Phase)
		assert.Nil(t, op.Snapshot)
		assert.Contains(t, readVolume(t, s, "hk-fail", "data"), "post-ran")
	})

	t.Run("onError Continue takes the snapshot with a warning; a hook past its timeout fails", func(t *testing.T) {
		hookPod(t, s, "hk-continue", map[string]string{
			"pre.hook.backup.cairn.io/command":  `["/bin/sh", "-c", "sleep 600"]`,
			"pre.hook.backup.cairn.io/timeout":  "2s",
			"pre.hook.backup.cairn.io/on-error": "Continue",
		})
		v := snapshotBackup(t, s, "hk-continue-1", "hk-continue", nil)
		assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		assert.GreaterOrEqual(t, v.Status.Warnings, 1)
		require.Len(t, v.Status.Hooks, 1)
		assert.Equal(t, "timed out after 2s", v.Status.Hooks[0].Error)
		assert.Equal(t, -1, v.Status.Hooks[0].ExitCode)
		assert.Equal(t, v1alpha1.OperationCompleted, operation(t, v.Status, "hk-continue", "data").Phase)
	})

	t.Run("spec hooks select pods; bad hooks get clear errors", func(t *testing.T) {
		hookPod(t, s, "hk-spec", map[string]string{
			"post.hook.backup.velero.io/container": "not-there",
			"post.hook.backup.velero.io/command":   "true",
		})
		hooks := &v1alpha1.BackupHooks{Resources: []v1alpha1.BackupResourceHook{{
			Name: "app-db", IncludedNamespaces: []string{"hk-*"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Pre: []v1alpha1.BackupHook{{Exec: &v1alpha1.ExecHook{Command: []string{"/bin/sh", "-c", "echo spec > /data/spec-ran"}}}},
		}}}
		v := snapshotBackup(t, s, "hk-spec-1", "hk-spec", hooks)
		assert.Equal(t, v1alpha1.PhasePartiallyFailed, v.Phase)
		require.Len(t, v.Status.Hooks, 2, "%+v", v.Status.Hooks)
		assert.Equal(t, "spec hook app-db", v.Status.Hooks[0].Source)
		assert.Empty(t, v.Status.Hooks[0].Error)
		assert.Contains(t, v.Status.Hooks[1].Error, `pod hk-spec/db has no container "not-there" (it has main)`)
		assert.Contains(t, readVolume(t, s, "hk-spec", "data"), "spec-ran")

		bad := &v1alpha1.BackupHooks{Resources: []v1alpha1.BackupResourceHook{{Name: "x",
			Pre: []v1alpha1.BackupHook{{Exec: &v1alpha1.ExecHook{Command: []string{"true"}, OnError: "Ignore"}}}}}}
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "hk-bad",
			IncludedNamespaces: []string{"hk-spec"}, Hooks: bad}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `hooks.resources[0].pre[0]: exec.onError "Ignore" must be Fail or Continue`)
		_, err = s.starter.GetBackup(ctx, "hk-bad")
		assert.Error(t, err, "the refused backup never started")
	})

	t.Run("SIGKILL of the worker during a pre hook: it runs again, the backup completes, the post hook runs", func(t *testing.T) {
		hookPod(t, s, "hk-kill", map[string]string{
			// The hook runs until the test lets it end: the kill lands mid-hook.
			"pre.hook.backup.velero.io/command":  `["/bin/sh", "-c", "echo run >> /data/pre-runs; until [ -e /data/go ]; do sleep 0.1; done"]`,
			"pre.hook.backup.velero.io/timeout":  "2m",
			"post.hook.backup.velero.io/command": `["/bin/sh", "-c", "touch /data/post-ran"]`,
		})
		_, err := s.starter.CreateBackup(ctx, moveRequest("hk-kill-1", "hk-kill"))
		require.NoError(t, err)
		waitVolumeFile(t, s, "hk-kill", "data", "pre-runs")
		w.kill()
		writeVolume(t, s, "hk-kill", "data", map[string]string{"go": ""})
		w = m.startMoverWorker()
		v := s.waitDone("hk-kill-1", 4*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
		require.Len(t, v.Status.Hooks, 2, "%+v", v.Status.Hooks)
		pre := v.Status.Hooks[0]
		assert.Equal(t, v1alpha1.HookPre, pre.Phase)
		assert.Equal(t, int32(2), pre.Attempt, "the kill landed while the pre hook ran: a second attempt ran it")
		files := readVolume(t, s, "hk-kill", "data")
		assert.Equal(t, "run\nrun\n", files["pre-runs"], "the hook runs at least once: here twice")
		assert.Contains(t, files, "post-ran")
	})

	t.Run("cancel during a pre hook: the post hook runs and the backup ends Canceled", func(t *testing.T) {
		hookPod(t, s, "hk-cancel", map[string]string{
			"pre.hook.backup.velero.io/command":  `["/bin/sh", "-c", "touch /data/pre-started && sleep 600"]`,
			"pre.hook.backup.velero.io/timeout":  "15m",
			"post.hook.backup.velero.io/command": `["/bin/sh", "-c", "touch /data/post-ran"]`,
		})
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "hk-cancel-1",
			IncludedNamespaces: []string{"hk-cancel"}}, Options: v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}}})
		require.NoError(t, err)
		waitVolumeFile(t, s, "hk-cancel", "data", "pre-started")
		_, err = s.starter.CancelBackup(ctx, "hk-cancel-1")
		require.NoError(t, err)
		v := s.waitDone("hk-cancel-1", 2*time.Minute)
		assert.Equal(t, v1alpha1.PhaseCanceled, v.Phase)
		assert.Contains(t, readVolume(t, s, "hk-cancel", "data"), "post-ran")
		assert.Nil(t, operation(t, v.Status, "hk-cancel", "data").Snapshot, "no snapshot was taken")
	})

	t.Run("restore hooks: an init container before the pod's own, an exec hook once it is ready, a wait timeout", func(t *testing.T) {
		kc := fastClient(t, s.cluster.Config())
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rh-src"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		barePod(t, s, "rh-src", "app", []string{"true"}, map[string]string{
			"init.hook.restore.velero.io/container-image": sandbox.BusyboxImage,
			"init.hook.restore.velero.io/container-name":  "restore-init",
			"init.hook.restore.velero.io/command":         `["/bin/sh", "-c", "echo init-hook-ran"]`,
			"post.hook.restore.velero.io/command":         `["/bin/sh", "-c", "echo restored-hook-ran"]`,
			"post.hook.restore.velero.io/wait-for-ready":  "true",
		})
		barePod(t, s, "rh-src", "stuck", []string{"false"}, map[string]string{
			"post.hook.restore.velero.io/command":        "true",
			"post.hook.restore.velero.io/wait-for-ready": "true",
			"post.hook.restore.velero.io/wait-timeout":   "5s",
		})
		v := snapshotBackup(t, s, "rh-1", "rh-src", nil)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)

		_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rh-r1", BackupName: "rh-1",
			NamespaceMapping: map[string]string{"rh-src": "rh-dst"}}})
		require.NoError(t, err)
		r := s.waitRestore("rh-r1", 3*time.Minute)
		assert.Equal(t, v1alpha1.PhasePartiallyFailed, r.Phase)
		assert.Contains(t, r.Status.FailureReason, "1 post-restore hooks failed: pod rh-dst/stuck (post.hook.restore.velero.io/): "+
			"container main of pod rh-dst/stuck was not ready within its wait timeout 5s (last: running, not ready)")
		require.Len(t, r.Status.Hooks, 2, "%+v", r.Status.Hooks)
		app := r.Status.Hooks[0]
		assert.Equal(t, "rh-dst/app", app.Pod)
		assert.Equal(t, 0, app.ExitCode, "%+v", app)
		assert.Equal(t, "restored-hook-ran\n", app.Stdout)

		restored, err := kc.CoreV1().Pods("rh-dst").Get(ctx, "app", metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, restored.Spec.InitContainers)
		assert.Equal(t, "restore-init", restored.Spec.InitContainers[0].Name)
		logs, err := kc.CoreV1().Pods("rh-dst").GetLogs("app", &corev1.PodLogOptions{Container: "restore-init"}).DoRaw(ctx)
		require.NoError(t, err)
		assert.Equal(t, "init-hook-ran\n", string(logs), "the init container ran before the pod's own")
	})

	t.Run("SIGKILL of the worker during a restore hook: it runs again, the restore completes", func(t *testing.T) {
		kc := fastClient(t, s.cluster.Config())
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rhk-src"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The hook writes where the test reads (a host directory) and runs
		// until the test lets it end: the kill lands mid-hook.
		marks := t.TempDir()
		markedPod(t, s, "rhk-src", "app", marks, map[string]string{
			"post.hook.restore.velero.io/command":      `["/bin/sh", "-c", "echo run >> /marks/runs; until [ -e /marks/go ]; do sleep 0.1; done"]`,
			"post.hook.restore.velero.io/exec-timeout": "2m",
		})
		v := snapshotBackup(t, s, "rhk-1", "rhk-src", nil)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)

		_, err = s.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "rhk-r1", BackupName: "rhk-1",
			NamespaceMapping: map[string]string{"rhk-src": "rhk-dst"}},
			Options: v1alpha1.RestoreOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}}})
		require.NoError(t, err)
		waitFile(t, filepath.Join(marks, "runs"))
		w.kill()
		require.NoError(t, os.WriteFile(filepath.Join(marks, "go"), nil, 0o644))
		w = m.startMoverWorker()

		r := s.waitRestore("rhk-r1", 3*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "reason: %s", r.Status.FailureReason)
		require.Len(t, r.Status.Hooks, 1, "%+v", r.Status.Hooks)
		assert.Equal(t, "rhk-dst/app", r.Status.Hooks[0].Pod)
		assert.Equal(t, 0, r.Status.Hooks[0].ExitCode, "%+v", r.Status.Hooks[0])
		assert.Equal(t, int32(2), r.Status.Hooks[0].Attempt, "the kill landed while the hook ran: a second attempt ran it")
		assert.Greater(t, activityAttempt(t, s, v1alpha1.RestoreWorkflowID("rhk-r1"), runRestoreHooksActivity), int32(1))
		runs, err := os.ReadFile(filepath.Join(marks, "runs"))
		require.NoError(t, err)
		assert.Equal(t, "run\nrun\n", string(runs), "the hook runs at least once: here twice")
	})
}

// markedPod makes pod name in ns (container "main", sleeping) that
// mounts the host directory marks at /marks, and waits until it runs.
func markedPod(t *testing.T, s *stack, ns, name, marks string, annotations map[string]string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	_, err := kc.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{{Name: "marks", MountPath: "/marks"}}}},
			Volumes: []corev1.Volume{{Name: "marks", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: marks}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodRunning(t, s, ns, name)
}

// waitFile waits until a file exists: a hook has reached that point.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a bound for a broken node, not a verdict
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s never appeared", path)
		time.Sleep(100 * time.Millisecond)
	}
}

// barePod makes pod name in ns (container "main", sleeping) whose
// readiness probe runs probe, and waits until it runs.
func barePod(t *testing.T, s *stack, ns, name string, probe []string, annotations map[string]string) {
	t.Helper()
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	_, err := kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "2147483647"},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1,
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: probe}}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodRunning(t, s, ns, name)
}

// waitPodRunning watches a pod until its phase is Running.
func waitPodRunning(t *testing.T, s *stack, ns, name string) {
	t.Helper()
	waitPodsRunning(t, s, ns, podNamed(name))
}

// waitPodsRunning waits until a pod of ns that the list options select
// runs.
func waitPodsRunning(t *testing.T, s *stack, ns string, selector func(*metav1.ListOptions)) {
	t.Helper()
	waitPodWhere(t, fastClient(t, s.cluster.Config()), ns, selector, "no pod of "+ns+" ran",
		func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

// waitPodWhere watches the pods of ns that the list options select until
// one is as done says, and returns it; what says what did not happen.
func waitPodWhere(t *testing.T, kc kubernetes.Interface, ns string, selector func(*metav1.ListOptions), what string,
	done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a broken node, not a verdict
	defer cancel()
	lw := cache.NewFilteredListWatchFromClient(kc.CoreV1().RESTClient(), "pods", ns, selector)
	var found *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if ok && done(p) {
			found = p
		}
		return found != nil, nil
	})
	if err != nil {
		require.NoError(t, err, "%s: %s", what, podStates(kc, ns))
	}
	return found
}

// podNamed selects the pod name.
func podNamed(name string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }
}

// podStates says, for a failure's message, how each pod of ns fares:
// phase, the conditions not met and the containers not running.
func podStates(kc kubernetes.Interface, ns string) string {
	pods, err := kc.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var states []string
	for _, p := range pods.Items {
		state := fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				state += fmt.Sprintf(", %s: %s %s", c.Type, c.Reason, c.Message)
			}
		}
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := c.State.Waiting; w != nil {
				state += fmt.Sprintf(", %s waiting: %s %s", c.Name, w.Reason, w.Message)
			}
		}
		states = append(states, state)
	}
	return strings.Join(states, "; ")
}

// hookPod makes namespace ns with claim "data" and pod "db" (label
// app=db, container "main") mounting it at /data, with annotations, and
// waits until the pod runs.
func hookPod(t *testing.T, s *stack, ns string, annotations map[string]string) {
	t.Helper()
	makeClaims(t, s, ns, "data")
	kc := fastClient(t, s.cluster.Config())
	ctx := context.Background()
	_, err := kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: map[string]string{"app": "db"}, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodRunning(t, s, ns, "db")
}

// snapshotBackup backs up a namespace with snapshots and no data
// movement, and waits until it ends.
func snapshotBackup(t *testing.T, s *stack, name, ns string, hooks *v1alpha1.BackupHooks) *starter.BackupView {
	t.Helper()
	_, err := s.starter.CreateBackup(context.Background(), starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
		Name: name, IncludedNamespaces: []string{ns}, Hooks: hooks}})
	require.NoError(t, err)
	return s.waitDone(name, 3*time.Minute)
}

// waitVolumeFile waits until a file exists in a claim's volume: a hook
// has reached that point.
func waitVolumeFile(t *testing.T, s *stack, ns, claim, name string) {
	t.Helper()
	dir, err := s.cluster.VolumePath(context.Background(), ns, claim)
	require.NoError(t, err)
	waitFile(t, filepath.Join(dir, name))
}
