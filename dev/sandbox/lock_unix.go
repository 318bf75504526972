//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDataDir takes an exclusive, non-blocking lock on a file in the data
// dir, so two sandboxes never share one etcd data dir. The kernel drops the
// lock when this process dies.
func lockDataDir(path string) (release func(), err error) {
	release, err = tryLockFile(path)
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("sandbox: data dir is in use by another sandbox (%s is locked)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock data dir: %w", err)
	}
	return release, nil
}

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// tryLockFile takes an exclusive lock on path (created if missing) without
// waiting; it fails with errLocked when another open file holds it.
func tryLockFile(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
