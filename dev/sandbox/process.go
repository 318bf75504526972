package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// process is a component run as a child process of this one (kube-
// controller-manager, the CSI driver and its sidecars): its own process
// group, killed by the kernel if this process dies (see childProcAttr), its
// output appended to a log file in the data dir.
type process struct {
	name  string
	cmd   *exec.Cmd
	log   *zap.Logger
	out   *os.File
	start int64         // size of the log file when the process started
	grace time.Duration // how long Stop waits after SIGTERM before SIGKILL
	done  chan struct{} // closed when the process has exited
	err   error         // its exit status, set before done is closed
	stop  chan struct{} // closed when Stop begins, so the exit is expected
}

type processConfig struct {
	name    string // for logs and errors
	path    string // the binary
	args    []string
	logPath string
	grace   time.Duration
}

// startProcess starts the process; it does not wait for it to work.
func startProcess(c processConfig, log *zap.Logger) (*process, error) {
	out, err := openLog(c.logPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", c.name, err)
	}
	start, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("sandbox: %s: log: %w", c.name, err)
	}
	cmd := exec.Command(c.path, c.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = childEnv()
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("sandbox: start %s: %w", c.name, err)
	}
	p := &process{
		name:  c.name,
		cmd:   cmd,
		log:   log.With(zap.String("component", c.name), zap.Int("pid", cmd.Process.Pid)),
		out:   out,
		start: start,
		grace: c.grace,
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
	go p.wait()
	p.log.Info(c.name+" started", zap.String("log", c.logPath))
	return p, nil
}

// childEnv is this process's environment without $KUBECONFIG, which some
// components (csi-provisioner) prefer to their --kubeconfig flag: a user's
// own cluster must never be the one a sandbox component talks to.
func childEnv() []string {
	env := os.Environ()
	kept := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	close(p.done)
	select {
	case <-p.stop:
	default:
		p.log.Error(p.name+" exited unexpectedly", zap.Error(p.err))
	}
}

// pid is the process's ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// logPath is the process's log file.
func (p *process) logPath() string { return p.out.Name() }

// exited returns a non-nil error if the process has exited.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%w); see %s", p.name, p.err, p.logPath())
	default:
		return nil
	}
}

// Stop sends SIGTERM, and SIGKILL if the process is still there after the
// grace period. Call it once.
func (p *process) Stop() error {
	close(p.stop)
	defer p.out.Close()
	select {
	case <-p.done:
		return nil // already gone; wait() has logged why
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: signal %s: %w", p.name, err)
	}
	timer := time.NewTimer(p.grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	p.log.Warn(p.name+" ignored SIGTERM, killing it", zap.Duration("grace", p.grace))
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// waitUntil calls done every pollInterval until it reports true. It fails
// when the process exits first or ctx ends, naming what it waited for
// ("listen on ...") and done's last error.
func (p *process) waitUntil(ctx context.Context, what string, done func() (bool, error)) error {
	start := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if err := p.exited(); err != nil {
			return fmt.Errorf("sandbox: waiting for %s to %s: %w", p.name, what, err)
		}
		select {
		case <-ctx.Done():
			// last may be nil, which %w would print as a bad verb.
			return fmt.Errorf("sandbox: %s did not %s after %s (see %s): %w (last: %v)",
				p.name, what, time.Since(start).Round(time.Millisecond), p.logPath(), ctx.Err(), last) //nolint:errorlint
		case <-tick.C:
		}
	}
}
