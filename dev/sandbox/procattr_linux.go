package sandbox

import "syscall"

// childProcAttr puts a child in its own process group (a terminal's Ctrl-C
// reaches only us, and Stop shuts the child down in order) and has the kernel
// kill it if this process dies first.
//
// Pdeathsig fires when the forking OS thread exits; the Go runtime ends
// threads only under runtime.LockOSThread, which this package does not use.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
