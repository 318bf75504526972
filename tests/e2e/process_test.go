package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a cairn process started by a test; its output goes to a file
// that is printed when the test fails.
type proc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, nil, args...)
}

// startProcEnv is startProc with env added to the test's environment.
func startProcEnv(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	return startBinary(t, name, cairnBin, env, append(args, "--log-format", "json")...)
}

// startBinary starts bin (cairn, or a server a test needs) with env added
// to the test's environment.
func startBinary(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &proc{t: t, name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("--- %s output (last 8 KiB) ---\n%s", name, tail(data, 8<<10))
		}
	})
	return p
}

// waitServing waits until a server a test started answers ready, and
// fails the test once p exits or a minute (a bound for a stuck start,
// not a verdict) passes without it.
func waitServing(t *testing.T, p *proc, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-p.done:
			require.FailNow(t, "server exited", "%s exited before it answered: %v", p.name, err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "%s did not come up: %v", p.name, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// listening is a ready check: addr takes TCP connections.
func listening(addr string) func() error {
	return func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// kill sends SIGKILL to the process by PID and waits until it is gone.
func (p *proc) kill() {
	p.t.Helper()
	p.t.Logf("SIGKILL %s (pid %d)", p.name, p.cmd.Process.Pid)
	require.NoError(p.t, syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL))
	<-p.done
}

// freeze stops the process (SIGSTOP): its work stands still, mid-step,
// until thaw, however long the test takes meanwhile. A test acts on a
// frozen process's run knowing the run cannot end first. Heartbeats stop
// too, so a freeze longer than a heartbeat timeout makes Temporal retry
// the step; a test that freezes must accept that.
func (p *proc) freeze() {
	p.t.Helper()
	p.t.Logf("SIGSTOP %s (pid %d)", p.name, p.cmd.Process.Pid)
	require.NoError(p.t, syscall.Kill(p.cmd.Process.Pid, syscall.SIGSTOP))
}

// thaw lets a frozen process go on (SIGCONT).
func (p *proc) thaw() {
	p.t.Helper()
	p.t.Logf("SIGCONT %s (pid %d)", p.name, p.cmd.Process.Pid)
	require.NoError(p.t, syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT))
}

// stop ends the process gracefully, or kills it after a grace period.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT) // a frozen process handles no SIGTERM
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// runCLI runs one cairn command to completion and returns its stdout,
// stderr and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err, "cairn %s", strings.Join(args, " "))
	return out.String(), errOut.String(), 0
}

func freePort(t *testing.T) string {
	t.Helper()
	// Below the kernel's ephemeral range: a port handed out for ":0" may
	// go to any outgoing connection of the tests running beside this one
	// before the process meant to listen on it starts; these go only to
	// processes told to listen on them, and never twice.
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		portsGiven[port] = true
		return addr
	}
	require.FailNow(t, "no free port", "between 10000 and %d", low)
	return ""
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default, 32768, when it cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 11000 {
		return 32768
	}
	return low
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
