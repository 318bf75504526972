package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/dev/sandbox/paths"
)

// The sandbox node (Options.Node). There is one per machine: its bridge,
// cgroup root and iptables chain have fixed names.
const (
	// NodeName is the node's name.
	NodeName = "cairn-node"
	// PodSubnet holds the pods' addresses, on NodeBridge; it overlaps no
	// route of this machine, and its traffic never leaves the machine.
	PodSubnet = "10.244.0.0/24"
	// NodeIP is the bridge's own address: the node's InternalIP, where the
	// kubelet listens.
	NodeIP = "10.244.0.1"
	// KubeletPodsDir is where the node's kubelet keeps its pods'
	// directories (a worker's --kubelet-pods-dir).
	KubeletPodsDir = paths.KubeletPodsDir
	// NodeBridge is the Linux bridge the pods' veths join.
	NodeBridge = "cairn0"
	// ServiceSubnet holds the Services' ClusterIPs. It is routed to the
	// bridge, so a packet to a ClusterIP kube-proxy has no rule for yet
	// stays on this machine too.
	ServiceSubnet = "10.0.0.0/24"

	nodeDir = "node"
	// nodeKubeletDir is the kubelet's root directory: short and fixed, as
	// unix socket paths under it (plugin registration) allow 107 bytes.
	nodeKubeletDir = paths.KubeletDir
	nodeCgroupRoot = "cairn-sandbox"
	nodeChain      = "CAIRN-SANDBOX"
	nodeLockPath   = "/run/cairn-sandbox-node.lock"
	nodeStopGrace  = 10 * time.Second
	// nodeReadyTimeout bounds the wait for the node to be Ready.
	nodeReadyTimeout = 2 * time.Minute
)

// nodeTools are the node's programs that come from the machine (Debian's
// containerd, runc and CNI plugins; `make sandbox-bins` installs them).
var nodeTools = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "iptables"}

// cniPluginDir holds Debian's CNI plugins.
const cniPluginDir = "/usr/lib/cni"

// node is the sandbox's one node: containerd, the kubelet, kube-scheduler
// and kube-proxy, and the bridge its pods live on.
type node struct {
	dir        string // DataDir/node, removed at every start and stop
	logDir     string // DataDir: the logs outlive the node
	log        *zap.Logger
	unlock     func()
	containerd *process
	kubelet    *process
	scheduler  *process
	proxy      *process
	forwarder  *apiForwarder
}

type nodeConfig struct {
	binDir      string
	cairnBinary string // "" for no CairnImage
	dataDir     string
	kubeconfig  string
	apiServer   string // host:port on loopback
	clientCA    string // the CA of the API server's kubelet client certificate
}

func (n *node) path(name string) string { return filepath.Join(n.dir, name) }

func (n *node) socket() string { return n.path("containerd/containerd.sock") }

// registrationDir is where the kubelet finds plugins (CSI drivers) that
// register with it.
func (n *node) registrationDir() string { return filepath.Join(nodeKubeletDir, "plugins_registry") }

// checkNodeTools says which of the node's programs are missing.
func checkNodeTools(binDir string) error {
	var missing []string
	for _, b := range []string{kubeletBin, schedulerBin, proxyBin} {
		if !isExecutable(filepath.Join(binDir, b)) {
			missing = append(missing, filepath.Join(binDir, b))
		}
	}
	for _, t := range nodeTools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if !isExecutable(filepath.Join(cniPluginDir, p)) {
			missing = append(missing, filepath.Join(cniPluginDir, p))
		}
	}
	if _, err := busyboxPath(); err != nil {
		missing = append(missing, "busybox (static)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox node: missing %s (run `make sandbox-bins`)", strings.Join(missing, ", "))
	}
	return nil
}

func busyboxPath() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("no busybox")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// startNode cleans what a dead sandbox node left, then starts containerd
// with the sandbox's images, the kubelet, kube-scheduler and kube-proxy,
// and returns once the node is Ready.
func startNode(ctx context.Context, c *Cluster, cfg nodeConfig) (_ *node, err error) {
	n := &node{dir: filepath.Join(cfg.dataDir, nodeDir), logDir: cfg.dataDir, log: c.opts.Log.Named("node")}
	if n.unlock, err = lockDataDir(nodeLockPath); err != nil {
		return nil, fmt.Errorf("sandbox node: another sandbox on this machine runs one (%w)", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.stop())
		}
	}()
	if err := n.clean(); err != nil {
		return nil, err
	}
	if err := n.writeFiles(cfg); err != nil {
		return nil, err
	}
	if err := n.network(); err != nil {
		return nil, err
	}
	if n.forwarder, err = startAPIForwarder(cfg.apiServer, n.log); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := n.importImages(ctx, cfg.cairnBinary); err != nil {
		return nil, err
	}
	if n.kubelet, err = startProcess(processConfig{name: "kubelet", path: filepath.Join(cfg.binDir, kubeletBin), logPath: filepath.Join(n.logDir, "kubelet.log"),
		grace: nodeStopGrace, args: []string{
			"--config=" + n.path("kubelet.yaml"), "--kubeconfig=" + cfg.kubeconfig, "--hostname-override=" + NodeName,
			"--node-ip=" + NodeIP, "--root-dir=" + nodeKubeletDir, "--cert-dir=" + n.path("kubelet-pki"), "--v=2",
		}}, n.log); err != nil {
		return nil, err
	}
	if n.scheduler, err = startProcess(processConfig{name: "kube-scheduler", path: filepath.Join(cfg.binDir, schedulerBin),
		logPath: filepath.Join(n.logDir, "kube-scheduler.log"), grace: nodeStopGrace, args: []string{
			"--kubeconfig=" + cfg.kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1",
		}}, n.log); err != nil {
		return nil, err
	}
	if n.proxy, err = startProcess(processConfig{name: "kube-proxy", path: filepath.Join(cfg.binDir, proxyBin),
		logPath: filepath.Join(n.logDir, "kube-proxy.log"), grace: nodeStopGrace, args: []string{
			"--config=" + n.path("kube-proxy.yaml"), "--hostname-override=" + NodeName, "--v=1",
		}}, n.log); err != nil {
		return nil, err
	}
	if err := n.waitReady(ctx, c); err != nil {
		return nil, err
	}
	return n, nil
}

// waitReady waits until the node reports Ready and the node lifecycle
// controller has lifted its not-ready taint.
func (n *node) waitReady(ctx context.Context, c *Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	return n.kubelet.waitUntil(ctx, "make node "+NodeName+" Ready", func() (bool, error) {
		for _, p := range []*process{n.containerd, n.scheduler, n.proxy} {
			if err := p.exited(); err != nil {
				return false, err
			}
		}
		nd, err := c.cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, t := range nd.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady {
				return false, fmt.Errorf("taint %s", t.Key)
			}
		}
		for _, cond := range nd.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message)
			}
		}
		return false, nil
	})
}

func (n *node) startContainerd(ctx context.Context) (err error) {
	containerd, _ := exec.LookPath("containerd")
	if n.containerd, err = startProcess(processConfig{name: "containerd", path: containerd, logPath: filepath.Join(n.logDir, "containerd.log"),
		grace: nodeStopGrace, args: []string{"--config", n.path("containerd.toml")}}, n.log); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return n.containerd.waitUntil(ctx, "serve "+n.socket(), func() (bool, error) {
		out, err := n.ctr(ctx, "version")
		return err == nil, fmt.Errorf("%w: %s", err, out)
	})
}

// importImages makes the sandbox's images and imports them, so no pod
// ever pulls one.
func (n *node) importImages(ctx context.Context, cairn string) error {
	busybox, _ := busyboxPath()
	archive := n.path("images.tar")
	if err := writeImageArchive(archive, nodeImageSpecs(busybox, cairn)); err != nil {
		return fmt.Errorf("sandbox node: %w", err)
	}
	if out, err := n.ctr(ctx, "-n", "k8s.io", "images", "import", archive); err != nil {
		return fmt.Errorf("sandbox node: import images: %w: %s", err, out)
	}
	return os.Remove(archive)
}

func (n *node) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.socket()}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// network creates the bridge with the node's address, and keeps the pods'
// traffic on this machine: what they send to anything but the bridge is
// dropped.
func (n *node) network() error {
	for _, args := range [][]string{
		{"ip", "link", "add", NodeBridge, "type", "bridge"},
		{"ip", "addr", "add", NodeIP + "/24", "dev", NodeBridge},
		{"ip", "link", "set", NodeBridge, "up"},
		{"ip", "route", "add", ServiceSubnet, "dev", NodeBridge},
		{"iptables", "-w", "-N", nodeChain},
		{"iptables", "-w", "-A", nodeChain, "-s", PodSubnet, "!", "-o", NodeBridge, "-j", "DROP"},
		{"iptables", "-w", "-I", "FORWARD", "-j", nodeChain},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("sandbox node: %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, root := range cgroupRoots() {
		if err := os.MkdirAll(filepath.Join(root, nodeCgroupRoot), 0o755); err != nil {
			return fmt.Errorf("sandbox node: cgroup root: %w", err)
		}
	}
	return nil
}

// stop stops the node's programs, then removes everything it made.
func (n *node) stop() error {
	var errs []error
	if n.forwarder != nil {
		n.forwarder.stop()
	}
	for _, p := range []*process{n.proxy, n.scheduler, n.kubelet, n.containerd} {
		if p != nil {
			errs = append(errs, p.Stop())
		}
	}
	errs = append(errs, n.clean())
	if n.unlock != nil {
		n.unlock()
	}
	return errors.Join(errs...)
}
