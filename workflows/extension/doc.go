// Package extension holds ExtensionCall, the workflow that runs one call
// of an extension's activity on the extension's task queue, with the
// registration's timeout and Temporal's retries, and names the extension
// in what it returns when the call fails.
package extension
