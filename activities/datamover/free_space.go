package datamover

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/dustin/go-humanize"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sys/unix"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// checkFreeSpace fails for good when the file system under dir has no
// room for the total bytes of a copy, less the bytes an earlier attempt
// already wrote there.
func checkFreeSpace(dir string, total int64) error {
	if total <= 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	free := int64(st.Bavail) * st.Bsize //nolint:gosec // block counts and sizes fit int64
	written, err := bytesUnder(dir)
	if err != nil {
		return err
	}
	if need := total - written; need > free {
		msg := fmt.Sprintf("the volume's copy needs %s more (%s in all), and its file system on this node has %s free",
			humanize.IBytes(uint64(need)), humanize.IBytes(uint64(total)), humanize.IBytes(uint64(free)))
		return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeNoSpace, nil)
	}
	return nil
}

// bytesUnder sums the sizes of the regular files below dir.
func bytesUnder(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of what %s holds: %w", dir, err)
	}
	return n, nil
}
