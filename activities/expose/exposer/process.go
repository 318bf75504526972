package exposer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/atomicfile"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/csistate"
)

// Process starts each data mover as a local process that reads the
// sandbox CSI driver's directory of the exposed volume. The process is
// not tied to the worker's life: a worker that dies mid-upload leaves the
// upload running, as a pod would.
type Process struct {
	*Volumes
	// CSIStateDir is the sandbox driver's state directory.
	CSIStateDir string
	// StateDir keeps a record and a log per data mover.
	StateDir string
	// Command starts a data mover, e.g. [cairn datamover --temporal-address
	// ...]; Expose appends --task-queue and --path.
	Command []string
	// Env is added to the process's environment (the repository password).
	Env []string
}

// processRecord is what Expose wrote down about a data mover it started.
type processRecord struct {
	PID       int    `json:"pid"`
	TaskQueue string `json:"taskQueue"`
	Attempt   int    `json:"attempt"`
	Path      string `json:"path"`
}

func (p *Process) recordPath(t Target) string {
	return filepath.Join(p.StateDir, t.moverName()+".json")
}

func (p *Process) logPath(t Target) string {
	return filepath.Join(p.StateDir, t.moverName()+".log")
}

// kopiaDir is the data mover's kopia connection file and cache: a pod's
// live and die with it, a process's with its record.
func (p *Process) kopiaDir(t Target) string {
	return filepath.Join(p.StateDir, t.moverName()+".kopia")
}

// Node is this machine: every process data mover runs here. A pod
// volume's copy takes its pod's node's slots, as a pod would.
func (p *Process) Node(_ context.Context, t Target) (string, error) {
	if t.Mode.OnNode() {
		return t.Node, nil
	}
	return hostname(), nil
}

// Expose creates the claim, waits until it is bound, and starts the data
// mover on the bound volume's directory.
func (p *Process) Expose(ctx context.Context, t Target, progress func(string)) (*Started, error) {
	if t.Mode.OnNode() {
		return p.exposePodVolume(ctx, t)
	}
	if _, err := p.EnsureClaim(ctx, t); err != nil {
		return nil, err
	}
	pv, err := p.WaitBound(ctx, t, progress)
	if err != nil {
		return nil, err
	}
	if pv.Spec.CSI == nil || !csistate.IsVolumeID(pv.Spec.CSI.VolumeHandle) {
		return nil, fmt.Errorf("volume %s is not a sandbox CSI volume: the process exposer only serves the sandbox (use the pod exposer)", pv.Name)
	}
	dir := csistate.VolumeDirForHandle(p.CSIStateDir, pv.Spec.CSI.VolumeHandle)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("volume %s: %w", pv.Name, err)
	}
	started := &Started{Claim: t.Namespace + "/" + t.Name(), Node: hostname()}
	if rec, ok := p.running(t); ok {
		started.DataMover = fmt.Sprintf("process %d", rec.PID)
		return started, nil
	}
	pid, err := p.start(t, dir)
	if err != nil {
		return nil, err
	}
	started.DataMover = fmt.Sprintf("process %d", pid)
	return started, nil
}

// exposePodVolume starts the data mover on the pod's volume directory,
// which is on this machine: the process exposer serves the sandbox,
// whose one node is this machine.
func (p *Process) exposePodVolume(ctx context.Context, t Target) (*Started, error) {
	if err := p.CheckPod(ctx, t); err != nil {
		return nil, err
	}
	if _, err := os.Stat(t.HostDir); err != nil {
		return nil, fmt.Errorf("volume directory of pod %s: %w (the process exposer reads pods of a node on this machine only)", t.Pod, err)
	}
	started := &Started{Node: t.Node}
	rec, ok := p.running(t)
	if !ok {
		pid, err := p.start(t, t.HostDir)
		if err != nil {
			return nil, err
		}
		rec.PID = pid
	}
	started.DataMover = fmt.Sprintf("process %d", rec.PID)
	return started, nil
}

func (p *Process) start(t Target, dir string) (int, error) {
	if len(p.Command) == 0 {
		return 0, errors.New("process exposer: no data mover command configured")
	}
	if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
		return 0, fmt.Errorf("data mover state directory: %w", err)
	}
	logFile, err := os.OpenFile(p.logPath(t), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("data mover log: %w", err)
	}
	defer func() { _ = logFile.Close() }() // the child holds it open
	args := append(append([]string{}, p.Command[1:]...), "--task-queue", t.TaskQueue, "--path", dir, "--kopia-config-dir", p.kopiaDir(t))
	if t.Mode == FSRestore {
		args = append(args, "--marker-dir", t.MarkerDir)
	}
	cmd := exec.Command(p.Command[0], args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session: neither the worker's death nor a signal to the
	// worker's process group stops an upload.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start data mover: %w", err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait() //nolint:errcheck // reaps the child; its log says how it ended
	rec := processRecord{PID: pid, TaskQueue: t.TaskQueue, Attempt: t.Attempt, Path: dir}
	data, _ := json.Marshal(rec)
	if err := atomicfile.Write(p.recordPath(t), data, 0o600); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return 0, fmt.Errorf("record data mover: %w", err)
	}
	return pid, nil
}

// running returns the attempt's record when its process is alive.
func (p *Process) running(t Target) (processRecord, bool) {
	var rec processRecord
	data, err := os.ReadFile(p.recordPath(t))
	if err != nil || json.Unmarshal(data, &rec) != nil {
		return rec, false
	}
	return rec, alive(rec)
}

// alive checks the PID and, against PID reuse, that the process is the
// data mover of the record's task queue.
func alive(rec processRecord) bool {
	if rec.PID <= 0 || syscall.Kill(rec.PID, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rec.PID))
	if err == nil {
		// A zombie (state Z) has exited and waits to be reaped.
		if fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			return false
		}
	}
	return bytes.Contains(cmdline, []byte(rec.TaskQueue))
}

// Diagnose says whether the claim is unbound, or how the data mover ended.
func (p *Process) Diagnose(ctx context.Context, t Target) string {
	if t.Mode.OnNode() {
		if err := p.CheckPod(ctx, t); err != nil {
			return err.Error()
		}
	} else if state := p.ClaimState(ctx, t); state != "" {
		return state
	}
	rec, ok := p.running(t)
	if ok {
		return fmt.Sprintf("data mover process %d is running but has not polled task queue %s", rec.PID, t.TaskQueue)
	}
	tail := lastLines(p.logPath(t), 5)
	if rec.PID == 0 {
		return "no data mover process was started"
	}
	if tail == "" {
		return fmt.Sprintf("data mover process %d exited", rec.PID)
	}
	return fmt.Sprintf("data mover process %d exited: %s", rec.PID, tail)
}

// StartState says whether the attempt's process runs, or ended before
// it took its task (its log's last lines say why).
func (p *Process) StartState(_ context.Context, t Target) (v1alpha1.StartWatchResult, error) {
	rec, ok := p.running(t)
	switch {
	case ok:
		return v1alpha1.StartWatchResult{Running: true}, nil
	case rec.PID == 0:
		return v1alpha1.StartWatchResult{}, nil
	}
	msg := fmt.Sprintf("data mover process %d exited before it started", rec.PID)
	if tail := lastLines(p.logPath(t), 5); tail != "" {
		msg += ": " + tail
	}
	return v1alpha1.StartWatchResult{Never: msg, Retry: true}, nil
}

// Cleanup stops every data mover of the target and deletes its claim and
// snapshot clone.
func (p *Process) Cleanup(ctx context.Context, t Target, progress func(string)) error {
	if err := p.stopMovers(t); err != nil {
		return err
	}
	if t.Mode.OnNode() {
		return nil
	}
	return p.DeleteAll(ctx, t, progress)
}

// HandOver stops the target's data movers and hands its volume over.
func (p *Process) HandOver(ctx context.Context, t Target, ref ClaimRef, progress func(string)) (string, error) {
	if err := p.stopMovers(t); err != nil {
		return "", err
	}
	return p.Volumes.HandOver(ctx, t, ref, progress)
}

// stopMovers stops every data mover of the target and forgets it, with
// its kopia cache.
func (p *Process) stopMovers(t Target) error {
	records, _ := filepath.Glob(filepath.Join(p.StateDir, t.Name()+"-*.json"))
	for _, path := range records {
		var rec processRecord
		data, err := os.ReadFile(path)
		if err == nil && json.Unmarshal(data, &rec) == nil && alive(rec) {
			stop(rec)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove data mover record: %w", err)
		}
	}
	caches, _ := filepath.Glob(filepath.Join(p.StateDir, t.Name()+"-*.kopia"))
	for _, dir := range caches {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove data mover kopia cache: %w", err)
		}
	}
	return nil
}

// stop asks the data mover's session to end, then kills it.
func stop(rec processRecord) {
	_ = syscall.Kill(-rec.PID, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && alive(rec) {
		_ = clock.Sleep(context.Background(), 100*time.Millisecond)
	}
	if alive(rec) {
		_ = syscall.Kill(-rec.PID, syscall.SIGKILL)
	}
}

// Running lists the PIDs of live data movers started from stateDir.
func Running(stateDir string) []int {
	var pids []int
	for _, rec := range liveRecords(stateDir) {
		pids = append(pids, rec.PID)
	}
	return pids
}

// StopAll stops every live data mover started from stateDir: `cairn dev`
// does on exit, since its data movers would otherwise poll a Temporal
// that is gone until their idle timeout.
func StopAll(stateDir string) {
	for _, rec := range liveRecords(stateDir) {
		stop(rec)
	}
}

func liveRecords(stateDir string) []processRecord {
	records, _ := filepath.Glob(filepath.Join(stateDir, "*.json"))
	var live []processRecord
	for _, path := range records {
		var rec processRecord
		data, err := os.ReadFile(path)
		if err == nil && json.Unmarshal(data, &rec) == nil && alive(rec) {
			live = append(live, rec)
		}
	}
	return live
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
