// Package e2e runs cairn as users do: real processes (`cairn dev` for
// Temporal, `cairn worker`), a real sandbox Kubernetes control plane, a file
// backup location. Processes are killed with SIGKILL by PID to show that a
// backup resumes instead of failing.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cairnBin is the binary under test, built once per package run.
var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		return 0
	}
	dir, err := os.MkdirTemp("", "cairn-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	// cairn dev runs cairn-dev, the build with the dev server, from
	// beside cairn.
	for bin, tags := range map[string]string{cairnBin: "", filepath.Join(dir, "cairn-dev"): "devserver"} {
		build := exec.Command("go", "build", "-tags", tags, "-o", bin, "../../cmd/cairn")
		// Static: the sandbox node's data mover pods run it from a scratch
		// image.
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: build", filepath.Base(bin)+":", err)
			return 1
		}
	}
	stopProxy, err := startLocalhostProxy()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer stopProxy()
	defer stopSharedCluster()
	return m.Run()
}
