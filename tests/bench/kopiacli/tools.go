// Module kopiacli builds the kopia command line at the version cairn
// links, as the reference of the data path benchmark (`go install
// kopia@v0.23.1` fails on a proxy that refuses its version list).

//go:build tools

package tools

import _ "github.com/kopia/kopia"
