package sandbox

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clean removes whatever a node of this data dir left, running or dead:
// containerd's shims and every process in the node's cgroups, the mounts
// under its directory and the kubelet's (container roots, volumes,
// network namespaces),
// its cgroups, the bridge, its iptables rules and kube-proxy's, and the
// directory itself.
func (n *node) clean() error {
	var errs []error
	for _, pid := range pidsMatching(shimOf(n.socket())) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	errs = append(errs, killCgroupProcs())
	errs = append(errs, unmountUnder(n.dir), unmountUnder(nodeKubeletDir))
	errs = append(errs, removeCgroups())
	if _, err := os.Stat("/sys/class/net/" + NodeBridge); err == nil {
		if out, err := exec.Command("ip", "link", "del", NodeBridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %w: %s", NodeBridge, err, out))
		}
	}
	errs = append(errs, removeNodeChains())
	errs = append(errs, n.removeHostState())
	for _, dir := range []string{n.dir, filepath.Dir(nodeKubeletDir)} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox node: clean up: %w", err)
	}
	return nil
}

// Where containerd 1.6, the CNI plugins and the kubelet keep state outside
// the node's directory, whatever their configuration.
const (
	shimSocketDir   = "/run/containerd/s"
	cniResultsDir   = "/var/lib/cni/results"
	devicePluginDir = "/var/lib/kubelet/device-plugins"
)

// removeHostState removes what the node's pods left outside its
// directory: each pod's shim socket and CNI results, found by the pod
// sandbox IDs in containerd's state, and the kubelet's device plugin
// socket.
func (n *node) removeHostState() error {
	var errs []error
	rm := func(path string) {
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
	}
	tasks, _ := os.ReadDir(n.path("containerd/state/io.containerd.runtime.v2.task/k8s.io"))
	for _, t := range tasks {
		id := t.Name()
		rm(filepath.Join(shimSocketDir, fmt.Sprintf("%x", sha256.Sum256([]byte(filepath.Join(n.socket(), "k8s.io", id))))))
		rm(filepath.Join(cniResultsDir, "cairn-sandbox-"+id+"-eth0"))
		rm(filepath.Join(cniResultsDir, "cni-loopback-"+id+"-lo"))
	}
	rm(devicePluginDir)
	_ = os.Remove(filepath.Dir(devicePluginDir)) // when empty
	return errors.Join(errs...)
}

// nodeOwnsChain: the kubelet's, kube-proxy's and CNI's chains are
// KUBE-* and CNI-*, the node's own is nodeChain. Only the sandbox node
// runs Kubernetes on this machine, so they are all its.
func nodeOwnsChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-") || name == nodeChain
}

// removeNodeChains removes the node's iptables chains from every table,
// IPv4 and IPv6, with the rules of the built-in chains that jump to them.
func removeNodeChains() error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			errs = append(errs, removeChainsOf(bin, table))
		}
	}
	return errors.Join(errs...)
}

func removeChainsOf(bin, table string) error {
	out, err := exec.Command(bin, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil // no such table here
	}
	var ours []string
	jumps := map[string][]int{} // built-in chain -> numbers of its rules that jump to ours
	number := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "-N" && nodeOwnsChain(f[1]):
			ours = append(ours, f[1])
		case len(f) >= 2 && f[0] == "-A" && !nodeOwnsChain(f[1]):
			number[f[1]]++
			for i := 2; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && nodeOwnsChain(f[i+1]) {
					jumps[f[1]] = append(jumps[f[1]], number[f[1]])
				}
			}
		}
	}
	var errs []error
	run := func(args ...string) {
		if out, err := exec.Command(bin, append([]string{"-w", "-t", table}, args...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s %s: %w: %s", bin, table, strings.Join(args, " "), err, out))
		}
	}
	for chain, nums := range jumps {
		for i := len(nums) - 1; i >= 0; i-- { // the last first: numbers stay valid
			run("-D", chain, strconv.Itoa(nums[i]))
		}
	}
	for _, c := range ours {
		run("-F", c)
	}
	for _, c := range ours {
		run("-X", c)
	}
	return errors.Join(errs...)
}

// pidsMatching lists the processes but this one whose command line, its
// arguments joined by spaces, match accepts. A zombie's is empty.
func pidsMatching(match func(cmdline string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && len(data) > 0 && match(strings.ReplaceAll(string(data), "\x00", " ")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// shimOf matches the shims of the containerd that listens on socket.
func shimOf(socket string) func(cmdline string) bool {
	return func(cmdline string) bool {
		return strings.Contains(cmdline, "containerd-shim") && strings.Contains(cmdline, socket)
	}
}

// cgroupRoots are the directories the node's cgroup root goes under: one
// per v1 controller, or the v2 hierarchy.
func cgroupRoots() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var roots []string
	for _, e := range entries {
		dir := filepath.Join("/sys/fs/cgroup", e.Name())
		if e.IsDir() && e.Name() != "unified" && fileExists(filepath.Join(dir, "cgroup.procs")) {
			roots = append(roots, dir)
		}
	}
	return roots
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// nodeCgroups lists the node's cgroup directories, deepest first.
func nodeCgroups() []string {
	var dirs []string
	for _, root := range cgroupRoots() {
		_ = filepath.WalkDir(filepath.Join(root, nodeCgroupRoot), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killCgroupProcs SIGKILLs every process in the node's cgroups (the
// containers' processes, which outlive a killed shim) and waits until
// they are gone.
func killCgroupProcs() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []int
		for _, dir := range nodeCgroups() {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					left = append(left, pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of the node's cgroups outlived SIGKILL", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func removeCgroups() error {
	var errs []error
	for _, dir := range nodeCgroups() {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unmountUnder(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
