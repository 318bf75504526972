//go:build !linux

package sandbox

import "syscall"

// childProcAttr: without Pdeathsig outside Linux, a child outlives a parent
// that dies without Stop.
func childProcAttr() *syscall.SysProcAttr { return nil }
