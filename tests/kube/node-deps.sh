#!/usr/bin/env bash
# Installs what the sandbox's node takes from Debian: containerd and runc,
# the CNI plugins, a static busybox for its images, iptables, conntrack
# and iproute2. Nothing happens when they are all there already.
set -euo pipefail

need=()
for tool in containerd containerd-shim-runc-v2 ctr runc iptables conntrack ip; do
	command -v "$tool" >/dev/null || need+=("$tool")
done
for plugin in bridge host-local loopback portmap; do
	[[ -x /usr/lib/cni/$plugin ]] || need+=("cni-$plugin")
done
[[ -x /bin/busybox || -x /usr/bin/busybox ]] || need+=(busybox)
((${#need[@]} == 0)) && exit 0

echo "installing the sandbox node's Debian packages (missing: ${need[*]})" >&2
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
	echo "node-deps: need root and apt-get to install containerd runc containernetworking-plugins busybox-static iptables conntrack iproute2" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q >&2 || ! apt-get install -y -q --no-install-recommends \
	containerd runc containernetworking-plugins busybox-static iptables conntrack iproute2 >&2; then
	echo "node-deps: apt-get failed: the sandbox's node cannot run without these packages" >&2
	exit 1
fi
