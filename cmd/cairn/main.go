// Command cairn is backup and restore for Kubernetes on Temporal: one
// binary for the dev stack, the worker, the starter API and the CLI.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // schedules name IANA zones; not every host has them

	"github.com/cairn-backup/cairn/starter"
)

func main() {
	// Everything cairn writes is private to its user: backups hold
	// Secrets, and a file location or the kopia cache would otherwise get
	// 0644 files (the blob library creates them 0666, and under /tmp
	// while they are written).
	syscall.Umask(0o077)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(report(err))
	}
}

// report prints err for a terminal and returns the exit code it maps to.
func report(err error) int {
	var exit *exitError
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(os.Stderr, exit.msg)
		}
		return exit.code
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	var invalid *starter.InvalidError
	if errors.As(err, &invalid) && len(invalid.Problems) > 1 {
		for _, p := range invalid.Problems {
			fmt.Fprintln(os.Stderr, "  -", p)
		}
	}
	var usage *usageError
	if errors.As(err, &usage) {
		return starter.ExitInvalid
	}
	return starter.ExitCode(err)
}

// usageError is a mistake in flags or arguments (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitError ends the command with a chosen code, e.g. --wait on a backup
// that ended PartiallyFailed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
