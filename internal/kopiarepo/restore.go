package kopiarepo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/kopia/kopia/snapshot"
	"github.com/kopia/kopia/snapshot/restore"
	"github.com/kopia/kopia/snapshot/snapshotfs"
)

// RestoreProgress is where a restore stands.
type RestoreProgress struct {
	RestoredBytes int64 `json:"restoredBytes"`
	SkippedBytes  int64 `json:"skippedBytes"`
	TotalBytes    int64 `json:"totalBytes"`
	Files         int64 `json:"files"`
}

// String reads "restoring: 1.2 GiB of 2.0 GiB (60%)".
func (p RestoreProgress) String() string {
	done := p.RestoredBytes + p.SkippedBytes
	if p.TotalBytes <= 0 {
		return "restoring: " + humanize.IBytes(uint64(done)) + " written"
	}
	return fmt.Sprintf("restoring: %s of %s (%.0f%%)", humanize.IBytes(uint64(done)), humanize.IBytes(uint64(p.TotalBytes)),
		100*min(1, float64(done)/float64(p.TotalBytes)))
}

// ErrSnapshotNotFound: the repository holds no snapshot of that ID (its
// backup was deleted, or the location is another one).
var ErrSnapshotNotFound = errors.New("the volume's kopia snapshot is not in the repository")

// ErrSnapshotMismatch: the snapshot's tags name another backup or volume
// than the restore expects of it: volumes.json points at data that is
// not this volume's.
var ErrSnapshotMismatch = errors.New("the kopia snapshot is not the backed-up volume's")

// RestoreRequest writes one snapshot into a directory.
type RestoreRequest struct {
	SnapshotID string
	// Backup and Volume ("namespace/claim"), when set, must be the
	// snapshot's tags: a bucket writer may not steer a restore to another
	// volume's data.
	Backup string
	Volume string
	// Path is the (empty or partly restored) directory to write into.
	Path string
	// Parallel files at once; 0 uses 8.
	Parallel int
	Progress func(RestoreProgress)
}

// RestoreResult is what a finished restore wrote.
type RestoreResult struct {
	Bytes    int64         `json:"bytes"`
	Files    int64         `json:"files"`
	Dirs     int64         `json:"dirs"`
	Symlinks int64         `json:"symlinks"`
	Skipped  int64         `json:"skippedBytes"`
	Duration time.Duration `json:"duration"`
}

// checkTags compares a snapshot's tags with what the request expects.
func (req RestoreRequest) checkTags(tags map[string]string) error {
	if req.Backup != "" && tags[tagBackup] != req.Backup {
		return fmt.Errorf("kopia snapshot %s belongs to backup %q, not %q: %w", req.SnapshotID, tags[tagBackup], req.Backup, ErrSnapshotMismatch)
	}
	if req.Volume != "" && tags[tagVolume] != req.Volume {
		return fmt.Errorf("kopia snapshot %s holds volume %q, not %q: %w", req.SnapshotID, tags[tagVolume], req.Volume, ErrSnapshotMismatch)
	}
	return nil
}

// Restore writes the snapshot's tree into req.Path, sparse where the data
// has holes. It is incremental: files a cut-short attempt already wrote
// (same size and time) are skipped, so a retry carries on.
func (r *Repository) Restore(ctx context.Context, req RestoreRequest) (*RestoreResult, error) {
	start := time.Now()
	man, err := snapshot.LoadSnapshot(ctx, r.Repository, manifestID(req.SnapshotID))
	if errors.Is(err, snapshot.ErrSnapshotNotFound) {
		return nil, fmt.Errorf("kopia snapshot %s in %s: %w", req.SnapshotID, r.location, ErrSnapshotNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", req.SnapshotID, err)
	}
	if err := req.checkTags(man.Tags); err != nil {
		return nil, err
	}
	root := snapshotfs.EntryFromDirEntry(r.Repository, man.RootEntry)
	asRoot := os.Geteuid() == 0
	// Not atomic per file: a file cut short by a crash keeps a time other
	// than the snapshot's, so the incremental retry writes it again.
	// Files are written sparsely by fileOutput, not by kopia's own copy.
	out := &restore.FilesystemOutput{
		TargetPath: req.Path, OverwriteDirectories: true, OverwriteFiles: true, OverwriteSymlinks: true,
		// Only root may give files to their owners, or change the volume's
		// root directory (the driver's): a data mover that runs as another
		// user (writing through the volume's fsGroup) leaves files its own
		// and what it may not change as it is.
		SkipOwners:             !asRoot,
		IgnorePermissionErrors: !asRoot,
	}
	if err := out.Init(ctx); err != nil {
		return nil, fmt.Errorf("restore target %s: %w", req.Path, err)
	}
	parallel := req.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	cancel := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { close(cancel) })
	defer stop()
	total := man.Stats.TotalFileSize
	st, err := restore.Entry(ctx, r.Repository, fileOutput{out}, root, restore.Options{
		Parallel: parallel, Incremental: true, Cancel: cancel,
		// Never leave placeholders: restore the whole tree.
		RestoreDirEntryAtDepth: math.MaxInt32,
		ProgressCallback: func(_ context.Context, s restore.Stats) {
			if req.Progress != nil {
				req.Progress(RestoreProgress{RestoredBytes: s.RestoredTotalFileSize, SkippedBytes: s.SkippedTotalFileSize,
					TotalBytes: total, Files: int64(s.RestoredFileCount)})
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("restore snapshot %s into %s: %w", req.SnapshotID, req.Path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("restore of snapshot %s stopped: %w", req.SnapshotID, err)
	}
	return &RestoreResult{Bytes: st.RestoredTotalFileSize, Files: int64(st.RestoredFileCount), Dirs: int64(st.RestoredDirCount),
		Symlinks: int64(st.RestoredSymlinkCount), Skipped: st.SkippedTotalFileSize, Duration: time.Since(start)}, nil
}
