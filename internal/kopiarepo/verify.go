package kopiarepo

import (
	"context"
	"errors"
	"fmt"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/snapshot"
	"github.com/kopia/kopia/snapshot/snapshotfs"
)

// VerifyResult is what kopia's verification of snapshots found.
type VerifyResult struct {
	// Files and Bytes are what the snapshots hold; ReadFiles and
	// ReadBytes what was read back whole.
	Files, Bytes, ReadFiles, ReadBytes int64
	// Errors name what is missing or unreadable, at most maxVerifyErrors.
	Errors []string
}

const maxVerifyErrors = 20

// VerifySnapshots checks, as `kopia snapshot verify` does, that every
// file of the snapshots has its contents in the index and in a pack blob
// that exists, and reads percent of the files back whole (100: all).
func (r *Repository) VerifySnapshots(ctx context.Context, ids []string, percent float64) (*VerifyResult, error) {
	opts := snapshotfs.VerifierOptions{VerifyFilesPercent: percent, MaxErrors: maxVerifyErrors}
	if dr, ok := r.Repository.(repo.DirectRepository); ok {
		blobs, err := blob.ReadBlobMap(ctx, dr.BlobReader())
		if err != nil {
			return nil, fmt.Errorf("list the repository's blobs: %w", err)
		}
		opts.BlobMap = blobs
	}
	v := snapshotfs.NewVerifier(ctx, r.Repository, opts)
	res, err := v.InParallel(ctx, func(tw *snapshotfs.TreeWalker) error {
		for _, id := range ids {
			man, err := snapshot.LoadSnapshot(ctx, r.Repository, manifestID(id))
			if errors.Is(err, snapshot.ErrSnapshotNotFound) {
				tw.ReportError(ctx, id, fmt.Errorf("kopia snapshot %s: %w", id, ErrSnapshotNotFound))
				continue
			}
			if err != nil {
				return fmt.Errorf("load snapshot %s: %w", id, err)
			}
			if err := tw.Process(ctx, snapshotfs.EntryFromDirEntry(r.Repository, man.RootEntry), id); err != nil {
				return err
			}
		}
		return nil
	})
	out := &VerifyResult{Files: res.Stats.ProcessedObjectCount, Bytes: res.Stats.ProcessedBytes,
		ReadFiles: res.Stats.ReadFileCount, ReadBytes: res.Stats.ReadBytes, Errors: res.ErrorStrings}
	if err != nil && len(res.ErrorStrings) == 0 {
		return nil, fmt.Errorf("verify snapshots: %w", err)
	}
	return out, nil
}
