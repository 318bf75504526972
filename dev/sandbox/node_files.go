package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeFiles writes the node's configuration: containerd's, the CNI
// network's, the kubelet's and kube-proxy's, and an empty resolv.conf, so
// no pod asks this machine's resolver (there is no cluster DNS).
func (n *node) writeFiles(cfg nodeConfig) error {
	files := map[string]string{
		"containerd.toml":             containerdConfig,
		"cni/net.d/10-cairn.conflist": cniConfig,
		"kubelet.yaml":                kubeletConfig,
		"kube-proxy.yaml":             kubeProxyConfig,
		"resolv.conf":                 "",
	}
	r := strings.NewReplacer("@DIR@", n.dir, "@SOCKET@", n.socket(), "@KUBECONFIG@", cfg.kubeconfig,
		"@BRIDGE@", NodeBridge, "@SUBNET@", PodSubnet, "@SERVICES@", ServiceSubnet, "@NODEIP@", NodeIP, "@CNIBIN@", cniPluginDir,
		"@PAUSE@", PauseImage, "@CGROUPROOT@", "/"+nodeCgroupRoot,
		"@CLIENTCA@", cfg.clientCA)
	for name, text := range files {
		path := n.path(name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("sandbox node: %w", err)
		}
		if err := os.WriteFile(path, []byte(r.Replace(text)), 0o600); err != nil {
			return fmt.Errorf("sandbox node: %w", err)
		}
	}
	return nil
}

// containerdConfig: everything under the node's directory, network
// namespaces included, so cleaning up is unmounting what is there. This
// VM cannot lower a process's oom_score_adj: without
// restrict_oom_score_adj every pod sandbox fails to start.
const containerdConfig = `version = 2
root = "@DIR@/containerd/root"
state = "@DIR@/containerd/state"
[grpc]
  address = "@SOCKET@"
[ttrpc]
  address = "@SOCKET@.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "@PAUSE@"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "@DIR@/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "@CNIBIN@"
    conf_dir = "@DIR@/cni/net.d"
[plugins."io.containerd.internal.v1.opt"]
  path = "@DIR@/containerd/opt"
`

// cniConfig: pods on the bridge, no masquerade, a route to the Services
// (the API server among them) through the node; the FORWARD rule the node
// adds drops what they send elsewhere.
const cniConfig = `{"cniVersion": "0.4.0", "name": "cairn-sandbox", "plugins": [
  {"type": "bridge", "bridge": "@BRIDGE@", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "@DIR@/cni/ipam",
            "ranges": [[{"subnet": "@SUBNET@", "gateway": "@NODEIP@"}]],
            "routes": [{"dst": "@SERVICES@", "gw": "@NODEIP@"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
`

// kubeletConfig: cgroups v1 and the cgroupfs driver on this machine;
// only the API server's client certificate gets in (logs, exec: pods
// reach the bridge address the kubelet listens on, and must not exec
// through it), each request authorized by a SubjectAccessReview; and
// eviction that never fires on a full build disk.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: @CGROUPROOT@
failSwapOn: false
containerRuntimeEndpoint: unix://@SOCKET@
address: @NODEIP@
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: @CLIENTCA@}
authorization:
  mode: Webhook
resolvConf: @DIR@/resolv.conf
podLogsDir: @DIR@/pod-logs
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
enforceNodeAllocatable: []
serializeImagePulls: false
`

// kubeProxyConfig: iptables mode; node ports only on the bridge, and
// conntrack sysctls left as they are.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: @KUBECONFIG@
mode: iptables
clusterCIDR: @SUBNET@
nodePortAddresses: ["@SUBNET@"]
bindAddress: 127.0.0.1
healthzBindAddress: ""
metricsBindAddress: ""
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`
