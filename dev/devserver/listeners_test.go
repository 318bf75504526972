package devserver_test

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertLoopbackListeners checks that every TCP socket this process
// listens on is bound to 127.0.0.1 (Linux only: it reads /proc).
func assertLoopbackListeners(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Log("listener check needs /proc; skipped")
		return
	}
	own := socketInodes(t)
	found := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !own[fields[9]] {
				continue // not listening, or not ours
			}
			found++
			local := fields[1]
			assert.True(t, strings.HasPrefix(local, "0100007F:"), "listener on %s (%s) is not 127.0.0.1", local, table)
		}
		_ = f.Close()
		require.NoError(t, sc.Err())
	}
	// frontend, history, matching, worker, ui
	assert.GreaterOrEqual(t, found, 5, "expected the server's listeners")
	t.Logf("%d listening sockets, all on 127.0.0.1", found)
}

// socketInodes returns the inodes of this process's open sockets.
func socketInodes(t *testing.T) map[string]bool {
	t.Helper()
	fds, err := filepath.Glob("/proc/self/fd/*")
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(rest, "]")] = true
		}
	}
	return inodes
}
