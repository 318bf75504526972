package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/cairn-backup/cairn/starter"
)

// process is one process the bench started; done closes when it exits.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error       // how it exited, once done is closed
	stopped atomic.Bool // the bench stopped it: not a failure
}

func startProcess(logPath, bin string, args ...string) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s %v: %w", bin, args, err)
	}
	p := &process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) stop() {
	p.stopped.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// unaskedExit is how the process ended, unless the bench stopped it:
// call it once done is closed.
func (p *process) unaskedExit() error {
	if p.stopped.Load() {
		return nil
	}
	return p.exited()
}

// exited says how the process ended, with the last lines of its log.
func (p *process) exited() error {
	return fmt.Errorf("%s exited (%w); the end of %s:\n%s", filepath.Base(p.cmd.Path), p.err, p.logPath, logTail(p.logPath, 15))
}

func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// watched is ctx, canceled with the process's exit as its cause as soon
// as any of procs exits unasked: the bench never waits on a process that
// is gone.
func watched(ctx context.Context, procs ...*process) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	for _, p := range procs {
		go func() {
			select {
			case <-p.done:
				if err := p.unaskedExit(); err != nil {
					cancel(err)
				}
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled) }
}

// waitBound bounds every wait of the bench: a run that takes longer is
// stuck, not slow, at the sizes the bench runs.
const waitBound = 2 * time.Hour

// peakRSSMB is the process's high-water resident set (VmHWM), in MiB.
func (p *process) peakRSSMB() (float64, error) {
	status := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	kb, ok := procField(status, "VmHWM:")
	if !ok {
		return 0, fmt.Errorf("no VmHWM in %s", status)
	}
	return float64(kb) / 1024, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// dialTemporal waits until the Temporal process serves cairn's namespace.
func dialTemporal(ctx context.Context, addr string) (client.Client, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err == nil {
			// Ready once cairn's search attributes can be queried.
			if _, err = c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: `CairnKind = "backup"`}); err == nil {
				return c, nil
			}
			c.Close()
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("Temporal at %s did not come up: %w", addr, context.Cause(ctx))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("Temporal at %s did not come up: %w", addr, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitDone waits for the backup created to end and returns its view and
// its start-to-close seconds as Temporal saw them.
func waitDone(ctx context.Context, s setup, created *starter.CreateResult) (*starter.BackupView, float64, error) {
	// The run's close is waited for on Temporal's side (one long poll),
	// not by asking for the backup's status over and over: each GetBackup
	// of a running backup is a describe and a status query, work the
	// server and the worker would do inside the time measured.
	seconds, err := runSeconds(ctx, s.tc, created.WorkflowID, created.RunID)
	if err != nil {
		return nil, 0, err
	}
	v, err := s.sc.GetBackup(ctx, created.Name)
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("backup %s: %w", created.Name, err)
	case !v.Phase.Done():
		return nil, 0, fmt.Errorf("backup %s: its run closed in phase %s", created.Name, v.Phase)
	}
	return v, seconds, nil
}

// polling waits until worker p polls queue for both workflow and activity
// tasks, so a run timed from its start does not time the worker's own
// start-up. Its pollers are told from an earlier worker's, which the
// server lists for a while after it stopped, by the PID in their identity.
func (p *process) polling(ctx context.Context, tc client.Client, queue string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	mine := fmt.Sprintf("%d@", p.cmd.Process.Pid)
	kinds := []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY}
	for {
		ready := 0
		for _, kind := range kinds {
			resp, err := tc.DescribeTaskQueue(ctx, queue, kind)
			if err != nil {
				return fmt.Errorf("describe task queue %s: %w", queue, err)
			}
			if slices.ContainsFunc(resp.GetPollers(), func(pi *taskqueuepb.PollerInfo) bool { return strings.HasPrefix(pi.GetIdentity(), mine) }) {
				ready++
			}
		}
		if ready == len(kinds) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the worker (PID %d) did not poll task queue %s: %w", p.cmd.Process.Pid, queue, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
