//go:build !devserver

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// devBinary is the build of cairn with `cairn dev` in it (make build
// puts it beside cairn; `go build -tags devserver ./cmd/cairn`).
const devBinary = "cairn-dev"

// newDevCommand hands `cairn dev` to cairn-dev. The dev command links a
// whole Temporal server and the Kubernetes sandbox, whose package
// initialisation alone keeps some 80 MB of the binary resident in every
// process started from it; workers, APIs, controllers and data mover
// pods need none of it.
func newDevCommand(*globals) *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process: embedded Temporal with its UI, a worker and the starter API (runs " + devBinary + ")",
		Long: `cairn dev runs ` + devBinary + `, the build of cairn with the dev server in it,
found beside this binary, with the same arguments: ` + devBinary + ` dev --help
tells what it does. 'make build' builds both into bin/.`,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return execDev()
		},
	}
}

// execDev replaces this process with cairn-dev: the same PID, so a
// supervisor that signals it reaches the dev server.
func execDev() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	bin := filepath.Join(filepath.Dir(self), devBinary)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("cairn dev is not in this build, and %s is not beside it ('make build' builds both): %w", bin, err)
	}
	if err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ()); err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	return nil
}
