//go:build tools

// Package provisioner pins external-provisioner's csi-provisioner, so
// `go mod tidy` records everything its main package imports.
package provisioner

import (
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
)
