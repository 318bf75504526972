//go:build tools

// Package snapshotter pins external-snapshotter's snapshot-controller and
// csi-snapshotter, so `go mod tidy` records everything their main packages
// import.
package snapshotter

import (
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller"
)
