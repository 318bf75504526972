#!/usr/bin/env bash
# Builds the sandbox cluster's binaries from the Go module proxy into OUT
# (default .cache/kube/bin at the repository root):
#
#   etcd, kube-apiserver, kube-controller-manager   this module (k8s.io/kubernetes)
#   kubelet, kube-scheduler, kube-proxy, kubectl     this module, for the sandbox's node
#   snapshot-controller, csi-snapshotter, crds/      ./snapshotter (external-snapshotter/v8)
#   csi-provisioner                                  ./provisioner (external-provisioner/v6)
#   cairn-csi-driver                                 ../csidriver in the root module
#
# Each module's group has a stamp of its go.mod, go.sum and this script, so
# a later call rebuilds it only when a pinned version changes; the Go build
# cache keeps a rebuild after a fresh clone short. The CSI driver is our own
# code: it is rebuilt on every call (a second when nothing changed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/.cache/kube/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# up_to_date STAMPFILE WANT FILE...: the stamp says WANT and every FILE
# (relative to out) exists.
up_to_date() {
	local stamp=$1 want=$2
	shift 2
	[[ -f $out/$stamp && $(cat "$out/$stamp") == "$want" ]] || return 1
	local f
	for f in "$@"; do
		[[ -e $out/$f ]] || return 1
	done
}

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# version_of MODDIR MODULE: the version MODDIR's go.mod requires.
version_of() {
	awk -v m="$2" '$1==m{print $2; exit} $1=="require" && $2==m{print $3; exit}' "$1/go.mod"
}

# Kubernetes: etcd, kube-apiserver, kube-controller-manager.
stamp=$(hash_of "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/etcd/main.go")
if ! up_to_date STAMP "$stamp" etcd kube-apiserver kube-controller-manager; then
	kube_version=$(version_of "$here" k8s.io/kubernetes)
	major=$(echo "${kube_version#v}" | cut -d. -f1)
	minor=$(echo "${kube_version#v}" | cut -d. -f2)
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
	echo "building sandbox binaries ($kube_version) into $out" >&2
	(
		cd "$here"
		go build -o "$out/etcd" ./etcd
		go build -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
		go build -ldflags "$ldflags" -o "$out/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
	)
	echo "$stamp" >"$out/STAMP"
fi

# The node's Kubernetes parts, a group of their own so that adding them
# did not rebuild the control plane.
stamp=$(hash_of "$here/go.mod" "$here/go.sum" "$here/build.sh")
if ! up_to_date STAMP.node "$stamp" kubelet kube-scheduler kube-proxy kubectl; then
	kube_version=$(version_of "$here" k8s.io/kubernetes)
	major=$(echo "${kube_version#v}" | cut -d. -f1)
	minor=$(echo "${kube_version#v}" | cut -d. -f2)
	pkg=k8s.io/component-base/version
	ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	echo "building the sandbox node's kubelet, kube-scheduler, kube-proxy and kubectl ($kube_version) into $out" >&2
	(
		cd "$here"
		for cmd in kubelet kube-scheduler kube-proxy kubectl; do
			go build -ldflags "$ldflags" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
		done
	)
	echo "$stamp" >"$out/STAMP.node"
fi

# external-snapshotter: snapshot-controller, csi-snapshotter and the
# VolumeSnapshot CRDs, copied from the client module it builds against.
mod=$here/snapshotter
stamp=$(hash_of "$mod/go.mod" "$mod/go.sum" "$here/build.sh")
crds="crds/snapshot.storage.k8s.io_volumesnapshotclasses.yaml crds/snapshot.storage.k8s.io_volumesnapshotcontents.yaml crds/snapshot.storage.k8s.io_volumesnapshots.yaml"
# shellcheck disable=SC2086 # crds is a list
if ! up_to_date STAMP.snapshotter "$stamp" snapshot-controller csi-snapshotter $crds; then
	repo=github.com/kubernetes-csi/external-snapshotter
	version=$(version_of "$mod" $repo/v8)
	echo "building snapshot-controller and csi-snapshotter ($version) into $out" >&2
	(
		cd "$mod"
		go build -ldflags "-s -w -X main.version=$version" -o "$out/snapshot-controller" $repo/v8/cmd/snapshot-controller
		go build -ldflags "-s -w -X main.version=$version" -o "$out/csi-snapshotter" $repo/v8/cmd/csi-snapshotter
		client=$(go list -m -f '{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}' $repo/client/v8)
		if [[ -z $client ]]; then
			go mod download $repo/client/v8
			client=$(go list -m -f '{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}' $repo/client/v8)
		fi
		mkdir -p "$out/crds"
		for f in $crds; do
			install -m 0644 "$client/config/crd/$(basename "$f")" "$out/$f"
		done
	)
	echo "$stamp" >"$out/STAMP.snapshotter"
fi

# external-provisioner: csi-provisioner.
mod=$here/provisioner
stamp=$(hash_of "$mod/go.mod" "$mod/go.sum" "$here/build.sh")
if ! up_to_date STAMP.provisioner "$stamp" csi-provisioner; then
	repo=github.com/kubernetes-csi/external-provisioner
	version=$(version_of "$mod" $repo/v6)
	echo "building csi-provisioner ($version) into $out" >&2
	(
		cd "$mod"
		go build -ldflags "-s -w -X main.version=$version" -o "$out/csi-provisioner" $repo/v6/cmd/csi-provisioner
	)
	echo "$stamp" >"$out/STAMP.provisioner"
fi

# The sandbox's own CSI driver, from the root module: always rebuilt, it
# changes with our code.
(cd "$root" && go build -o "$out/cairn-csi-driver" ./tests/csidriver)
