//go:build tools

// Package kube pins the Kubernetes components that the sandbox cluster runs,
// so `go mod tidy` records everything their main packages import.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
