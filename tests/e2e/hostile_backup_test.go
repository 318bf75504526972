package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/tests/fixtures/velero"
)

// bombBytes is what the gzip bomb decompresses to; peakRSSBound is the
// bound this test states on the worker's peak resident set while it
// refuses the bomb, well below what reading the object would take.
const (
	bombBytes    = 1 << 30
	peakRSSBound = 256 << 20
)

// TestGzipBombFailsTheRestoreWithoutHurtingTheWorker: a backup in the
// location whose tarball holds a 1 GiB object, a few MiB compressed,
// fails its restore as CorruptBackup, and the worker's peak RSS stays
// under peakRSSBound: the object is refused from its header, not read.
func TestGzipBombFailsTheRestoreWithoutHurtingTheWorker(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	w := s.startWorker()
	ctx := context.Background()
	require.NoError(t, velero.Write(ctx, s.location, velero.Backup{Name: "bomb", IncludedNamespaces: []string{"bomb"}, Bomb: bombBytes}))

	v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "from-bomb", BackupName: "bomb"}}, 2*time.Minute)
	assert.Equal(t, v1alpha1.PhaseFailed, v.Phase)
	assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeCorruptBackup)
	assert.Contains(t, v.Status.FailureReason, "bomb.json")

	peak := peakRSS(t, w.cmd.Process.Pid)
	t.Logf("worker peak RSS %d MiB (bound %d MiB) after refusing a %d MiB object", peak>>20, peakRSSBound>>20, bombBytes>>20)
	assert.Less(t, peak, int64(peakRSSBound), "the worker's peak RSS")
}

// peakRSS is a process's high-water resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "VmHWM:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			require.NoError(t, err)
			return kib << 10
		}
	}
	require.FailNow(t, "no VmHWM", "in /proc/%d/status", pid)
	return 0
}
