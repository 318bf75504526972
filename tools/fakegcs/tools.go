//go:build tools

// Package tools pins fake-gcs-server, the Google Cloud Storage emulator
// the tests of gs:// locations run against (built by `make test`).
package tools

import _ "github.com/fsouza/fake-gcs-server"
