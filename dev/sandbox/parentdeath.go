package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/atomicfile"
)

// envtest starts etcd and kube-apiserver in their own process group and
// without a parent-death signal, so they outlive a test binary that is
// killed or exits without Stop. It only lets us choose the path of each
// binary, so we point it at a two-line launcher that execs the real binary
// through util-linux's setpriv with --pdeathsig KILL: same PID, same
// arguments, but the kernel kills it when this process dies.

// launchers returns the paths envtest should run for etcd and
// kube-apiserver: launchers in dataDir/bin when setpriv is usable, else
// the binaries themselves.
func launchers(log *zap.Logger, binDir, dataDir string) (etcd, apiserver string) {
	etcd, apiserver = filepath.Join(binDir, etcdBin), filepath.Join(binDir, apiserverBin)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		log.Warn("setpriv not found: etcd and kube-apiserver will outlive this process if it dies without Stop")
		return etcd, apiserver
	}
	dir := filepath.Join(dataDir, wrapperDir)
	wEtcd, err1 := writeLauncher(dir, setpriv, etcd)
	wAPI, err2 := writeLauncher(dir, setpriv, apiserver)
	if err1 != nil || err2 != nil {
		log.Warn("cannot write parent-death launchers: etcd and kube-apiserver will outlive this process if it dies without Stop",
			zap.NamedError("etcd", err1), zap.NamedError("kube-apiserver", err2))
		return etcd, apiserver
	}
	// The data dir may be on a noexec mount, or setpriv may lack --pdeathsig.
	if out, err := exec.Command(wEtcd, "--version").CombinedOutput(); err != nil {
		log.Warn("parent-death launcher does not run: etcd and kube-apiserver will outlive this process if it dies without Stop",
			zap.Error(err), zap.ByteString("output", out))
		return etcd, apiserver
	}
	return wEtcd, wAPI
}

func writeLauncher(dir, setpriv, bin string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	script := "#!/bin/sh\n" +
		"# Written by cairn's sandbox: runs the binary, killed when its parent dies.\n" +
		"exec " + shellQuote(setpriv) + " --pdeathsig KILL -- " + shellQuote(bin) + ` "$@"` + "\n"
	path := filepath.Join(dir, filepath.Base(bin))
	if err := atomicfile.Write(path, []byte(script), 0o700); err != nil {
		return "", err
	}
	return path, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
