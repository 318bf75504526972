//go:build tools

// Package tools pins MinIO, the S3 server the tests of s3:// locations
// run against (built by `make test`; MinIO publishes no semver tags, so
// go.mod names an exact pseudo-version).
package tools

import _ "github.com/minio/minio"
