package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/cairn-backup/cairn/dev/sandbox/paths"
)

// devSandboxDefaults gives a worker started beside `cairn dev --sandbox
// --no-worker`, on the same data dir and against its sandbox, what cairn
// dev gives its own worker: data movers as local processes reading the
// sandbox CSI driver's files (and its node's pods, when it runs one), and
// the data dir's repository password. So
// `cairn worker --data-dir D --kubeconfig D/sandbox/kubeconfig` needs no
// more. A flag given on the command line wins; against any other cluster
// nothing changes.
func (d *dataMoverFlags) devSandboxDefaults(flags *pflag.FlagSet, g *globals) {
	sandboxDir := devSandboxDir(g)
	kubeconfig := g.kubeconfig
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if !samePath(kubeconfig, paths.KubeconfigIn(sandboxDir)) {
		return
	}
	csiDir := paths.CSIStateDirIn(sandboxDir)
	if _, err := os.Stat(csiDir); err != nil {
		return // a sandbox without the CSI stack moves no volume data
	}
	if !flags.Changed("datamover-exposer") {
		d.exposer = "process"
	}
	if !flags.Changed("csi-state-dir") {
		d.csiStateDir = csiDir
	}
	if _, err := os.Stat(paths.KubeletPodsDir); err == nil && !flags.Changed("kubelet-pods-dir") {
		d.podsDir = paths.KubeletPodsDir
	}
	password := devPasswordPath(g)
	if d.repo.passwordFile == "" && d.repo.passwordSecret == "" && os.Getenv(envRepositoryPassword) == "" {
		if _, err := os.Stat(password); err == nil {
			d.repo.passwordFile = password
		}
	}
}

// devSandboxDir is the data dir of cairn dev's sandbox.
func devSandboxDir(g *globals) string { return filepath.Join(g.dataDir, "sandbox") }

// devPasswordPath is the repository password cairn dev makes for its
// sandbox's volume data.
func devPasswordPath(g *globals) string { return filepath.Join(g.dataDir, "repository-password") }

// samePath: a and b name the same file, however they are written.
func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && filepath.Clean(absA) == filepath.Clean(absB)
}
