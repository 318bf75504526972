//go:build tools

// Package tools pins helm, built by `make tools` for lint and the
// in-cluster tests.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
