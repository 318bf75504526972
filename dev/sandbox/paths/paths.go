// Package paths names where a sandbox keeps what a worker beside it
// reads. It imports nothing heavy: a production binary links it, and
// the sandbox itself (envtest, the node) it must not.
package paths

import "path/filepath"

const (
	// KubeconfigFile is the sandbox's kubeconfig, under its data dir.
	KubeconfigFile = "kubeconfig"
	// CSIStateDir is the CSI driver's volumes, snapshots and control
	// file, under the sandbox's data dir.
	CSIStateDir = "csi"
	// KubeletDir is the node's kubelet root.
	KubeletDir = "/var/lib/cairn-sandbox/kubelet"
	// KubeletPodsDir is where the node's kubelet keeps its pods'
	// directories (a worker's --kubelet-pods-dir).
	KubeletPodsDir = KubeletDir + "/pods"
)

// KubeconfigIn is where a sandbox with data dir dataDir writes its
// kubeconfig.
func KubeconfigIn(dataDir string) string { return filepath.Join(dataDir, KubeconfigFile) }

// CSIStateDirIn is the CSI driver's state directory of a sandbox with data
// dir dataDir.
func CSIStateDirIn(dataDir string) string { return filepath.Join(dataDir, CSIStateDir) }
