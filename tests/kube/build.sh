#!/usr/bin/env bash
# Builds the sandbox cluster's binaries (etcd, kube-apiserver,
# kube-controller-manager) from the Go module proxy into OUT (default
# .cache/kube/bin at the repository root). A stamp of this module's go.mod and
# go.sum makes a later call a no-op until a pinned version changes; the Go
# build cache keeps a rebuild after a fresh clone short.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/.cache/kube/bin}
mkdir -p "$out"

stamp=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/etcd/main.go" | sha256sum | cut -d' ' -f1)
if [[ -f $out/STAMP && $(cat "$out/STAMP") == "$stamp" ]] &&
   [[ -x $out/etcd && -x $out/kube-apiserver && -x $out/kube-controller-manager ]]; then
	exit 0
fi

kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")
major=$(echo "${kube_version#v}" | cut -d. -f1)
minor=$(echo "${kube_version#v}" | cut -d. -f2)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"

cd "$here"
echo "building sandbox binaries ($kube_version) into $out" >&2
go build -o "$out/etcd" ./etcd
go build -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -ldflags "$ldflags" -o "$out/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
echo "$stamp" > "$out/STAMP"
