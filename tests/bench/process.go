package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/cairn-backup/cairn/starter"
)

type process struct{ cmd *exec.Cmd }

func startProcess(logPath, bin string, args ...string) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %v: %w", bin, args, err)
	}
	return &process{cmd: cmd}, nil
}

func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// peakRSSMB is the process's high-water resident set (VmHWM), in MiB.
func (p *process) peakRSSMB() (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return float64(kb) / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
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
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("Temporal at %s did not come up: %w", addr, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func waitDone(ctx context.Context, sc *starter.Client, name string) (*starter.BackupView, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for {
		v, err := sc.GetBackup(ctx, name)
		switch {
		case err == nil && v.Phase.Done():
			return v, nil
		case ctx.Err() != nil:
			return nil, fmt.Errorf("backup %s did not end: %w (last error: %v)", name, ctx.Err(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
