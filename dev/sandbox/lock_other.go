//go:build !unix

package sandbox

import "errors"

// lockDataDir is a no-op where flock is not available.
func lockDataDir(string) (func(), error) { return func() {}, nil }

// errLocked is never returned where flock is not available.
var errLocked = errors.New("locked")

// tryLockFile is a no-op where flock is not available.
func tryLockFile(string) (func(), error) { return func() {}, nil }
