package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
)

// fsResult is the JSON line of -kind fs: a file-system backup of a pod's
// emptyDir on the sandbox's node against the kopia command line's
// snapshot of the same directory, into fresh repositories on the same
// disk.
type fsResult struct {
	Benchmark string  `json:"benchmark"`
	Machine   machine `json:"machine"`
	DataBytes int64   `json:"dataBytes"`
	KopiaCLI  string  `json:"kopiaCli"`
	// UploadSeconds is the data mover's upload alone, as it recorded it;
	// OperationSeconds the whole operation (slot, data mover start,
	// upload, clean-up) and BackupSeconds the whole backup.
	UploadSeconds    float64 `json:"uploadSeconds"`
	OperationSeconds float64 `json:"operationSeconds"`
	BackupSeconds    float64 `json:"backupSeconds"`
	// KopiaUploadSeconds is `kopia snapshot create` of the directory.
	KopiaUploadSeconds float64 `json:"kopiaUploadSeconds"`
	// RatioUploadToKopia is cairn's upload speed over the CLI's (≥ 1:
	// as fast); RatioBackupToKopia the same for the whole backup.
	RatioUploadToKopia float64 `json:"ratioUploadToKopia"`
	RatioBackupToKopia float64 `json:"ratioBackupToKopia"`
	// RebackupSeconds is the backup of the unchanged volume, incremental
	// to the first.
	RebackupSeconds float64 `json:"rebackupSeconds"`
	// WriteSeconds is the data mover's write of the copy into the
	// restored pod's emptyDir, as it recorded it; RestoreSeconds the
	// whole restore, until the pod may start.
	WriteSeconds   float64 `json:"writeSeconds"`
	RestoreSeconds float64 `json:"restoreSeconds"`
	// KopiaRestoreSeconds is `kopia snapshot restore` of the CLI's
	// snapshot into an empty directory on the same disk.
	KopiaRestoreSeconds float64 `json:"kopiaRestoreSeconds"`
	// RatioWriteToKopia is cairn's write speed over the CLI's restore
	// (≥ 1: as fast); RatioRestoreToKopia the same for the whole restore.
	RatioWriteToKopia   float64 `json:"ratioWriteToKopia"`
	RatioRestoreToKopia float64 `json:"ratioRestoreToKopia"`
	PeakRSSMB           struct {
		DataMover        float64 `json:"dataMover"`
		KopiaUpload      float64 `json:"kopiaUpload"`
		DataMoverRestore float64 `json:"dataMoverRestore"`
		KopiaRestore     float64 `json:"kopiaRestore"`
	} `json:"peakRssMB"`
}

// fsPod and fsNamespace hold the benchmark's volume.
const fsPod, fsNamespace = "data", "fsbench"

// benchFS writes dataMB MiB into a running pod's emptyDir on the node,
// snapshots the directory with the kopia CLI, then backs the pod's volume
// up twice with cairn (the worker's process exposer reads it from this
// machine, as the node keeps it here); then the same for a restore.
func benchFS(ctx context.Context, s setup, cfg fsConfig) error {
	res := fsResult{Benchmark: "fs-backup-kopia", Machine: thisMachine(), KopiaCLI: cfg.kopiaCLI}
	kc, err := fastClient(cfg.rest)
	if err != nil {
		return err
	}
	dir, err := runningPodVolume(ctx, kc)
	if err != nil {
		return err
	}
	progress("writing %d MiB into the pod's emptyDir %s", cfg.dataMB, dir)
	if _, err := datatree.Write(dir, dataSet(cfg.dataMB, 3)); err != nil {
		return err
	}
	if res.DataBytes, err = datatree.Bytes(dir); err != nil {
		return err
	}

	progress("kopia CLI: snapshot create of the same directory")
	kopia, err := kopiaRepository(cfg.kopiaCLI, s.dir)
	if err != nil {
		return err
	}
	kUp, out, err := timed(kopia("snapshot", "create", dir, "--json"))
	if err != nil {
		return err
	}
	var kSnap struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &kSnap); err != nil {
		return fmt.Errorf("kopia snapshot create's answer: %w: %s", err, out)
	}
	if kSnap.ID == "" {
		return fmt.Errorf("kopia snapshot create said no snapshot ID: %s", out)
	}
	res.KopiaUploadSeconds, res.PeakRSSMB.KopiaUpload = kUp.seconds, kUp.rssMB

	progress("cairn: file-system backup of the pod's volume")
	peak := watchPeakRSS(ctx, cfg.moverStateDir)
	backup := v1alpha1.BackupSpec{Name: "fs-1", IncludedNamespaces: []string{fsNamespace}}
	secs, v, err := timedBackup(ctx, s, backup)
	if err != nil {
		return err
	}
	res.PeakRSSMB.DataMover = peak()
	op, err := podVolumeOperation(v.Status)
	if err != nil {
		return err
	}
	res.BackupSeconds, res.UploadSeconds = secs, op.Upload.Duration.Seconds()
	res.OperationSeconds = op.Updated.Sub(*op.Started).Seconds()
	res.RatioUploadToKopia = res.KopiaUploadSeconds / res.UploadSeconds
	res.RatioBackupToKopia = res.KopiaUploadSeconds / res.BackupSeconds

	progress("cairn: again, unchanged")
	backup.Name = "fs-2"
	if res.RebackupSeconds, _, err = timedBackup(ctx, s, backup); err != nil {
		return err
	}
	if err := benchFSRestore(ctx, s, cfg, kopia, kSnap.ID, &res); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// benchFSRestore restores the kopia CLI's snapshot into an empty
// directory, then backup fs-1 into a copy of the namespace, whose pod
// waits for its emptyDir's data.
func benchFSRestore(ctx context.Context, s setup, cfg fsConfig, kopia func(args ...string) *exec.Cmd, snapshotID string, res *fsResult) error {
	progress("kopia CLI: snapshot restore into an empty directory")
	kRestore, _, err := timed(kopia("snapshot", "restore", snapshotID, filepath.Join(s.dir, "kopia-restored")))
	if err != nil {
		return err
	}
	res.KopiaRestoreSeconds, res.PeakRSSMB.KopiaRestore = kRestore.seconds, kRestore.rssMB

	progress("cairn: restore of the pod, which waits while its emptyDir is written")
	peak := watchPeakRSS(ctx, cfg.moverStateDir)
	created, err := s.sc.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "fs-r", BackupName: "fs-1",
		NamespaceMapping: map[string]string{fsNamespace: fsNamespace + "-r"}}})
	if err != nil {
		return err
	}
	if res.RestoreSeconds, err = runSeconds(ctx, s.tc, created.WorkflowID, created.RunID); err != nil {
		return err
	}
	res.PeakRSSMB.DataMoverRestore = peak()
	v, err := s.sc.GetRestore(ctx, "fs-r")
	if err != nil {
		return err
	}
	if v.Phase != v1alpha1.PhaseCompleted || v.Status == nil || len(v.Status.PodVolumes) != 1 || v.Status.PodVolumes[0].Download == nil {
		return fmt.Errorf("restore fs-r ended %s without the pod volume written: %+v", v.Phase, v.Status)
	}
	res.WriteSeconds = v.Status.PodVolumes[0].Download.Duration.Seconds()
	res.RatioWriteToKopia = res.KopiaRestoreSeconds / res.WriteSeconds
	res.RatioRestoreToKopia = res.KopiaRestoreSeconds / res.RestoreSeconds
	return nil
}

// fsConfig is what -kind fs needs beyond the shared set-up.
type fsConfig struct {
	kopiaCLI      string
	dataMB        int
	moverStateDir string
	rest          *rest.Config
}

// runningPodVolume makes a pod whose emptyDir opts in to file-system
// backup, waits until it runs, and returns the emptyDir's directory on
// the node.
func runningPodVolume(ctx context.Context, kc kubernetes.Interface) (string, error) {
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fsNamespace}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	pod, err := kc.CoreV1().Pods(fsNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fsPod, Annotations: map[string]string{"backup.velero.io/backup-volumes": "data"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "2147483647"}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:                       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a bound for a broken node
	defer cancel()
	err = wait.PollUntilContextCancel(wctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods(fsNamespace).Get(ctx, fsPod, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s did not run: %w", fsNamespace, fsPod, err)
	}
	return filepath.Join(sandbox.KubeletPodsDir, string(pod.UID), "volumes/kubernetes.io~empty-dir/data"), nil
}

// podVolumeOperation is the backup's one file-system copy, completed.
func podVolumeOperation(st *v1alpha1.BackupStatus) (*v1alpha1.Operation, error) {
	for i, op := range st.Operations {
		if op.Kind == v1alpha1.OperationKindPodVolumeBackup {
			if op.Phase != v1alpha1.OperationCompleted || op.Upload == nil || op.Started == nil || op.Updated == nil {
				return nil, fmt.Errorf("the pod volume's copy ended %s: %s", op.Phase, op.Error)
			}
			return &st.Operations[i], nil
		}
	}
	return nil, fmt.Errorf("the backup copied no pod volume: %+v", st.Operations)
}

// watchPeakRSS follows the data mover processes started from stateDir
// until the returned function is called, which gives their highest peak
// RSS in MiB (a process data mover is not this process's child, so its
// rusage is not ours to read).
func watchPeakRSS(ctx context.Context, stateDir string) func() float64 {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan float64)
	go func() {
		var peak float64
		for ctx.Err() == nil {
			for _, pid := range exposer.Running(stateDir) {
				peak = max(peak, vmHWM(pid))
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		done <- peak
	}()
	return func() float64 {
		cancel()
		return <-done
	}
}

// vmHWM is a process's peak resident set in MiB; 0 when it is gone.
func vmHWM(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// fsWorkerArgs make the worker copy pod volumes with local data mover
// processes that read and write the sandbox node's pods directory, with
// the benchmark's repository password, and restored pods wait in the
// node's cairn image.
func fsWorkerArgs(dir string, cluster *sandbox.Cluster, stateDir string) ([]string, error) {
	password := filepath.Join(dir, "repository-password")
	if err := os.WriteFile(password, []byte(benchPassword), 0o600); err != nil {
		return nil, err
	}
	return []string{"--datamover-exposer", "process", "--csi-state-dir", cluster.CSIStateDir(), "--datamover-state-dir", stateDir,
		"--kubelet-pods-dir", sandbox.KubeletPodsDir, "--repository-password-file", password,
		"--datamover-image", sandbox.CairnImage, "--datamover-pull-policy", "Never"}, nil
}
