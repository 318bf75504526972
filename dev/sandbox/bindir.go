package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinDirEnv overrides DefaultBinDir.
const BinDirEnv = "CAIRN_KUBE_BIN_DIR"

const repoModule = "github.com/cairn-backup/cairn"

// Names of the binaries a BinDir must hold.
const (
	etcdBin              = "etcd"
	apiserverBin         = "kube-apiserver"
	controllerManagerBin = "kube-controller-manager"
)

// Names of the binaries a BinDir must hold for Options.Node.
const (
	kubeletBin   = "kubelet"
	schedulerBin = "kube-scheduler"
	proxyBin     = "kube-proxy"
)

// Names of the files a BinDir must hold for Options.CSI.
const (
	csiDriverBin          = "cairn-csi-driver"
	provisionerBin        = "csi-provisioner"
	snapshotterBin        = "csi-snapshotter"
	snapshotControllerBin = "snapshot-controller"
	crdDir                = "crds" // the VolumeSnapshot CRDs, one YAML file each
)

// snapshotCRDs are the files in BinDir/crds that Start installs for
// Options.CSI (tests/kube/build.sh copies them from external-snapshotter).
var snapshotCRDs = []string{
	"snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
	"snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
	"snapshot.storage.k8s.io_volumesnapshots.yaml",
}

// ErrMissingBinaries is wrapped by CheckBinDir and Start when a binary is
// not in the bin dir; `bash tests/kube/build.sh` builds them.
var ErrMissingBinaries = errors.New("sandbox binaries missing (build them with `bash tests/kube/build.sh`)")

// DefaultBinDir returns $CAIRN_KUBE_BIN_DIR if set, else <repo>/.cache/kube/bin
// where <repo> is the nearest directory at or above the working directory
// whose go.mod declares module github.com/cairn-backup/cairn. It does not
// check that the directory exists: see CheckBinDir.
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("sandbox: $%s=%q: %w", BinDirEnv, dir, err)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("sandbox: working directory: %w", err)
	}
	root, err := findRepoRoot(wd)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "kube", "bin"), nil
}

// findRepoRoot walks up from dir to the directory whose go.mod is cairn's
// (tests/kube has a go.mod of its own, which is skipped).
func findRepoRoot(dir string) (string, error) {
	for d := dir; ; {
		mod, err := moduleOf(filepath.Join(d, "go.mod"))
		if err != nil {
			return "", err
		}
		if mod == repoModule {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("sandbox: no go.mod of module %s at or above %s (set $%s)", repoModule, dir, BinDirEnv)
		}
		d = parent
	}
}

// moduleOf returns the module path declared by a go.mod, or "" if the file
// does not exist.
func moduleOf(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sandbox: read %s: %w", goMod, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = rest[:i]
			}
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("sandbox: read %s: %w", goMod, err)
	}
	return "", nil
}

// CheckBinDir reports, wrapping ErrMissingBinaries, which of etcd,
// kube-apiserver and kube-controller-manager are not executable files in dir.
func CheckBinDir(dir string) error {
	return checkBinDir(dir, false)
}

// CheckCSIBinDir is CheckBinDir for a sandbox with Options.CSI: it also
// reports the CSI driver, its sidecars and the VolumeSnapshot CRDs.
func CheckCSIBinDir(dir string) error {
	return checkBinDir(dir, true)
}

func checkBinDir(dir string, csi bool) error {
	bins := []string{etcdBin, apiserverBin, controllerManagerBin}
	if csi {
		bins = append(bins, csiDriverBin, provisionerBin, snapshotterBin, snapshotControllerBin)
	}
	var missing []string
	for _, name := range bins {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if csi {
		for _, name := range snapshotCRDs {
			rel := filepath.Join(crdDir, name)
			if fi, err := os.Stat(filepath.Join(dir, rel)); err != nil || !fi.Mode().IsRegular() {
				missing = append(missing, rel)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox: %s not in %s: %w", strings.Join(missing, ", "), dir, ErrMissingBinaries)
	}
	return nil
}
