package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/worker"
)

// fileSystemBackupOnTheNode copies pod volumes no snapshot takes from
// the sandbox's node: a Deployment's pod opts in its emptyDir and its
// local persistent volume with Velero's annotation, and its CSI claim is
// snapshotted, not copied too. The data mover is a pod on the node that
// mounts only the volume's directory, read-only; SIGKILLed mid-copy, a
// second one resumes from the checkpoint. The pod's hooks hold around
// the copy, and the copies are byte-identical (modes, symlinks, a file
// only its owner reads). A second backup with defaultVolumesToFsBackup
// copies every volume but the excluded, the projected token and the
// snapshotted claim, incrementally, a StatefulSet's pod's too; a third
// takes its copy with cairn dev's process exposer. The namespace is then
// deleted, and the copies written back into restored pods
// (fileSystemRestoreOnTheNode). s's data mover namespace exists.
func fileSystemBackupOnTheNode(t *testing.T, s *stack) {
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	// Slow enough that the copy is caught past half-way with room to
	// spare: heartbeats come every two seconds, and a checkpoint covers
	// the packs written, which the cap paces seconds apart.
	podWorker := func() *proc {
		return s.startPodMoverWorker(sandbox.CairnImage, "--kubelet-pods-dir", sandbox.KubeletPodsDir,
			"--datamover-upload-bytes-per-second", "4000000", "--datamover-download-bytes-per-second", "5000000")
	}
	w := podWorker()

	const ns = "fsb"
	makeClaims(t, s, ns, "db")
	localDir := localVolume(t, kc, ns, "files")
	_, err := datatree.Write(localDir, datatree.Spec{LargeFiles: 2, LargeSize: 1 << 20, SmallFiles: 30, SmallSize: 2048, Seed: 51})
	require.NoError(t, err)
	private := writePrivateFile(t, localDir)
	wantFiles, err := datatree.Digest(localDir)
	require.NoError(t, err)
	web := fsDeployment(t, s, kc, ns)
	cacheDir := emptyDirOnNode(web, "cache")
	// About 100 MiB: 26 seconds at this rate.
	_, err = datatree.Write(cacheDir, datatree.Spec{LargeFiles: 50, LargeSize: largeFileSize, SmallFiles: 100, SmallSize: 8192, Seed: 53, NoSparse: true})
	require.NoError(t, err)
	wantCache, err := datatree.Digest(cacheDir)
	require.NoError(t, err)
	total, err := datatree.Bytes(cacheDir)
	require.NoError(t, err)
	// A pod that never runs, and one whose volumes are only copied when
	// every volume is.
	_, err = kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "idle", Annotations: map[string]string{"cairn.io/backup-volumes": "scratch"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"e2e.cairn.io/no-such-node": "true"},
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage}},
			Volumes:    []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	api := optOutPod(t, s, kc, ns)
	spool := fsStatefulSet(t, s, kc, ns)

	// Opt-in, and the data mover killed mid-copy.
	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{
		BackupSpec: v1alpha1.BackupSpec{Name: "fsb-1", IncludedNamespaces: []string{ns}},
		Options:    v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 10 * time.Second}},
	})
	require.NoError(t, err)
	cache := v1alpha1.Volume{Namespace: ns, PodVolume: &v1alpha1.PodVolume{Pod: web.Name, Volume: "cache"}}
	// Just past half: the second data mover then has less than half to
	// upload again, and the data mover is caught well before its end.
	freezeAtHeartbeatCheckpoint(t, s, "fsb-1", cache, total*27/50, freezePodDataMover)
	pid := podDataMoverPID(t)
	t.Logf("SIGKILL pod volume data mover %d", pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	v := s.waitDone("fsb-1", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)

	ops := operationsByID(v.Status)
	assert.ElementsMatch(t, []string{"snapshot/fsb/db", "fs-backup/fsb/" + web.Name + "/cache", "fs-backup/fsb/" + web.Name + "/files"},
		keysOf(ops), "the snapshotted claim is not copied too")
	assert.Equal(t, v1alpha1.OperationKindCSISnapshot, ops["snapshot/fsb/db"].Kind)
	cacheOp, filesOp := ops["fs-backup/fsb/"+web.Name+"/cache"], ops["fs-backup/fsb/"+web.Name+"/files"]
	for _, op := range []v1alpha1.Operation{cacheOp, filesOp} {
		require.Equal(t, v1alpha1.OperationCompleted, op.Phase, "%+v", op)
		assert.Equal(t, v1alpha1.OperationKindPodVolumeBackup, op.Kind)
		require.NotNil(t, op.Upload)
		assert.Contains(t, op.Upload.DataMover, "pod "+worker.DefaultDataMoverNamespace+"/", "the data mover was a pod")
		assert.Equal(t, sandbox.NodeName, op.Upload.Node)
	}
	assert.Equal(t, v1alpha1.ConsistencyHooks, cacheOp.Volume.PodVolume.Consistency, "the pod's pre hook ran before the copy")
	assert.Equal(t, "volumes/kubernetes.io~local-volume/fsb-files", filesOp.Volume.PodVolume.Dir)
	assert.Equal(t, "files", filesOp.Volume.Claim)
	assert.Equal(t, 2, cacheOp.Upload.Attempts, "a second data mover finished the copy")
	assert.Less(t, cacheOp.Upload.UploadedBytes, total/2, "the second data mover uploaded less than half again")
	assert.Equal(t, 2, activityAttempts(t, s, cacheOp.WorkflowID, uploadVolumeActivity), "the kill landed mid-upload")

	// The pre hook wrote its mark before the copy, the post hook after.
	gotCache := s.restoredDigest(t, cacheOp.Upload.SnapshotID)
	assert.Contains(t, gotCache, "hook-pre", "the pre hook ran before the copy")
	assert.NotContains(t, gotCache, "hook-post", "the post hook ran after the copy")
	delete(gotCache, "hook-pre")
	assert.Empty(t, datatree.Diff(wantCache, gotCache, 10), "the emptyDir's copy is byte-identical")
	assert.FileExists(t, filepath.Join(cacheDir, "hook-post"))
	assert.Empty(t, datatree.Diff(wantFiles, s.restoredDigest(t, filesOp.Upload.SnapshotID), 10), "the local volume's copy is byte-identical")
	assert.Contains(t, wantFiles, private)
	assert.ElementsMatch(t, []string{
		"pod fsb/" + web.Name + ": backup.velero.io/backup-volumes names volume missing, which the pod does not have",
		"pod fsb/idle is Pending, not Running: its volumes scratch are not copied",
	}, backupWarnings(t, s, "fsb-1"))
	recordHistory(t, s, cacheOp.WorkflowID, "pod_volume_backup_watches_start.json")
	recordHistory(t, s, v1alpha1.BackupWorkflowID("fsb-1"), "backup_baseline.json")
	assertNoDataMoverPods(t, s)

	// Opt-out: every volume but the excluded, the never copied and the
	// snapshotted; the cache is incremental to the first copy.
	_, err = s.starter.CreateBackup(ctx, starter.CreateBackupRequest{
		BackupSpec: v1alpha1.BackupSpec{Name: "fsb-2", IncludedNamespaces: []string{ns}, DefaultVolumesToFsBackup: ptr.To(true)},
	})
	require.NoError(t, err)
	v = s.waitDone("fsb-2", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "reason: %s", v.Status.FailureReason)
	ops = operationsByID(v.Status)
	assert.ElementsMatch(t, []string{"snapshot/fsb/db", "fs-backup/fsb/" + web.Name + "/cache", "fs-backup/fsb/" + web.Name + "/files",
		"fs-backup/fsb/api/keep", "fs-backup/fsb/queue-0/spool"}, keysOf(ops), "not api's excluded tmp, nor the token or ConfigMap volumes")
	again := ops["fs-backup/fsb/"+web.Name+"/cache"]
	require.NotNil(t, again.Upload, "%+v", again)
	assert.Equal(t, cacheOp.Upload.SnapshotID, again.Upload.ParentID, "incremental to the first backup's copy")
	assert.Less(t, again.Upload.UploadedBytes, total/10, "an unchanged volume is not uploaded again")
	filesAgain := ops["fs-backup/fsb/"+web.Name+"/files"]
	require.NotNil(t, filesAgain.Upload, "%+v", filesAgain)
	keep := ops["fs-backup/fsb/api/keep"]
	require.NotNil(t, keep.Upload, "%+v", keep)
	assert.Equal(t, "defaultVolumesToFsBackup", keep.Volume.PodVolume.SelectedBy)
	assert.Equal(t, v1alpha1.ConsistencyCrash, keep.Volume.PodVolume.Consistency, "api has no hooks")
	assert.Equal(t, api.keep, s.restoredDigest(t, keep.Upload.SnapshotID))
	spoolOp := ops["fs-backup/fsb/queue-0/spool"]
	require.NotNil(t, spoolOp.Upload, "%+v", spoolOp)
	assert.Equal(t, spool, s.restoredDigest(t, spoolOp.Upload.SnapshotID), "the StatefulSet's pod's copy")
	assertNoDataMoverPods(t, s)

	// cairn dev's process exposer reads the same directories, from this
	// machine, where the sandbox's node keeps them.
	w.stop()
	m := &moverStack{stack: s, stateDir: filepath.Join(t.TempDir(), "datamovers")}
	pw := m.startMoverWorkerArgs(repoPassword, []string{"--kubelet-pods-dir", sandbox.KubeletPodsDir})
	s.backup(v1alpha1.BackupSpec{Name: "fsb-3", IncludedNamespaces: []string{ns}})
	v, err = s.starter.GetBackup(ctx, "fsb-3")
	require.NoError(t, err)
	ops = operationsByID(v.Status)
	third := ops["fs-backup/fsb/"+web.Name+"/files"]
	require.NotNil(t, third.Upload, "%+v", third)
	assert.Contains(t, third.Upload.DataMover, "process ")
	assert.Equal(t, filesAgain.Upload.SnapshotID, third.Upload.ParentID, "incremental to the last copy, a pod's")
	assert.Empty(t, datatree.Diff(wantFiles, s.restoredDigest(t, third.Upload.SnapshotID), 10))
	assert.Empty(t, exposer.Running(m.stateDir), "no data mover process is left")
	pw.stop()

	// The namespace is lost, and restored from fsb-2.
	deleteNamespace(t, s.cluster.Config(), ns)
	fileSystemRestoreOnTheNode(t, s, fsBackupOfWeb{pod: web.Name, cache: again, cacheFiles: 50, files: wantFiles, keep: api.keep, spool: spool},
		podWorker(), podWorker)
}

// emptyDirOnNode is the directory of pod's emptyDir volume on the
// sandbox's node, as this machine sees it.
func emptyDirOnNode(pod *corev1.Pod, volume string) string {
	return filepath.Join(sandbox.KubeletPodsDir, string(pod.UID), "volumes/kubernetes.io~empty-dir", volume)
}

// freezeAtHeartbeatCheckpoint waits until the volume's upload heartbeats
// a checkpoint of at least bytes, then freezes its data mover, whose
// upload must still be running. It reads the heartbeat, not the
// repository: opening that derives its key, which on a loaded machine
// takes longer than a small upload.
func freezeAtHeartbeatCheckpoint(t *testing.T, s *stack, backup string, v v1alpha1.Volume, bytes int64,
	freeze func(*testing.T) (thaw func())) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var best kopiarepo.UploadProgress // the largest checkpoint seen, for a failure's message
	beats := 0
	for {
		p, ok := uploadHeartbeat(t, s, backup, v)
		if ok && p.CheckpointedBytes >= bytes {
			break
		}
		if ok {
			beats++
			if p.CheckpointedBytes >= best.CheckpointedBytes {
				best = p
			}
		}
		if time.Now().After(deadline) {
			require.Fail(t, "no checkpoint", "upload of %s heartbeated no checkpoint of %d bytes (best of %d polls that saw it running: %+v); data movers: %s; pending: %s",
				v.Key(), bytes, beats, best, podStates(fastClient(t, s.cluster.Config()), worker.DefaultDataMoverNamespace),
				pendingActivities(t, s, v1alpha1.VolumeWorkflowID(backup, v)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	freeze(t)
	p, ok := uploadHeartbeat(t, s, backup, v)
	require.True(t, ok, "the upload of %s ended before its data mover froze", v.Key())
	t.Logf("data mover of %s frozen with a checkpoint of %d bytes", v.Key(), p.CheckpointedBytes)
}

// dataMoverNamespace makes cairn's namespace with the repository
// password's Secret, which data mover pods read.
func dataMoverNamespace(t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	ns := worker.DefaultDataMoverNamespace
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cairn-repository"},
		StringData: map[string]string{"repository-password": repoPassword}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// localVolume makes a local persistent volume on a host directory of the
// node, of a StorageClass with no provisioner, and claim bound to it in
// ns; it returns the directory.
func localVolume(t *testing.T, kc kubernetes.Interface, ns, claim string) string {
	t.Helper()
	ctx := context.Background()
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := kc.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-disk"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wait}, metav1.CreateOptions{})
	require.NoError(t, err)
	pvName := ns + "-" + claim
	dir := freeLocalVolume(t, kc, pvName)
	_, err = kc.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local-disk"), VolumeName: pvName,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return dir
}

// freeLocalVolume makes local persistent volume name of 1Gi and class
// local-disk on an empty host directory of the node, for any claim; it
// returns the directory.
func freeLocalVolume(t *testing.T, kc kubernetes.Interface, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "local-disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	_, err := kc.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, StorageClassName: "local-disk",
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
					Values: []string{sandbox.NodeName}}}}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return dir
}

// fsStatefulSet makes StatefulSet queue in ns, whose pod queue-0 keeps
// some data in its emptyDir spool, and returns the spool's digest once
// the pod runs.
func fsStatefulSet(t *testing.T, s *stack, kc kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "queue"}
	_, err := kc.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "queue"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{{Name: "spool", MountPath: "/spool"}}}},
					Volumes:                       []corev1.Volume{{Name: "spool", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodRunning(t, s, ns, "queue-0")
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "queue-0", metav1.GetOptions{})
	require.NoError(t, err)
	dir := emptyDirOnNode(pod, "spool")
	_, err = datatree.Write(dir, datatree.Spec{SmallFiles: 5, SmallSize: 1024, Seed: 59})
	require.NoError(t, err)
	digest, err := datatree.Digest(dir)
	require.NoError(t, err)
	return digest
}

// fsDeployment makes Deployment web in ns: one pod mounting the emptyDir
// cache, the claims files and db, opting cache, files, db and a volume
// it lacks in to file-system backup, with hooks that mark the cache; it
// waits until the pod runs and returns it.
func fsDeployment(t *testing.T, s *stack, kc kubernetes.Interface, ns string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	_, err := kc.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					"backup.velero.io/backup-volumes":    "cache,files,db,missing",
					"pre.hook.backup.velero.io/command":  `["/bin/sh", "-c", "echo frozen > /cache/hook-pre"]`,
					"post.hook.backup.velero.io/command": `["/bin/sh", "-c", "echo thawed > /cache/hook-post"]`,
				}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{
							{Name: "cache", MountPath: "/cache"}, {Name: "files", MountPath: "/files"}, {Name: "db", MountPath: "/db"}}}},
					Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						claim("files"), claim("db")},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodsRunning(t, s, ns, func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	require.Fail(t, "the running pod of web is gone")
	return nil
}

// fsOptOutPod is pod api, which opts out of its tmp volume.
type fsOptOutPod struct {
	// keep is the digest of its volume keep.
	keep map[string]string
}

// optOutPod makes pod api in ns with the emptyDirs keep (some data) and
// tmp (excluded by annotation) and a ConfigMap volume, and waits until it
// runs.
func optOutPod(t *testing.T, s *stack, kc kubernetes.Interface, ns string) fsOptOutPod {
	t.Helper()
	ctx := context.Background()
	_, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Annotations: map[string]string{"backup.velero.io/backup-volumes-excludes": "tmp"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{
					{Name: "keep", MountPath: "/keep"}, {Name: "tmp", MountPath: "/tmp"}, {Name: "settings", MountPath: "/settings"}}}},
			Volumes: []corev1.Volume{
				{Name: "keep", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			},
			TerminationGracePeriodSeconds: new(int64),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPodRunning(t, s, ns, "api")
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = datatree.Write(emptyDirOnNode(pod, "keep"), datatree.Spec{SmallFiles: 10, SmallSize: 1024, Seed: 57})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(emptyDirOnNode(pod, "tmp"), "scratch"), []byte("not copied"), 0o644))
	keep, err := datatree.Digest(emptyDirOnNode(pod, "keep"))
	require.NoError(t, err)
	return fsOptOutPod{keep: keep}
}

func operationsByID(st *v1alpha1.BackupStatus) map[string]v1alpha1.Operation {
	ops := map[string]v1alpha1.Operation{}
	for _, op := range st.Operations {
		ops[op.ID] = op
	}
	return ops
}

// activityAttempts counts the times a workflow's history scheduled an
// activity type.
func activityAttempts(t *testing.T, s *stack, workflowID, activityType string) int {
	t.Helper()
	n := 0
	for _, e := range runHistory(t, s, workflowID) {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
			e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activityType {
			n++
		}
	}
	return n
}

// backupWarnings are the messages of a backup's warnings, from its
// results.json.
func backupWarnings(t *testing.T, s *stack, backup string) []string {
	t.Helper()
	var results v1alpha1.BackupResults
	require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/"+backup+"/results.json"), &results))
	var warnings []string
	for _, w := range results.Warnings {
		warnings = append(warnings, w.Message)
	}
	return warnings
}
