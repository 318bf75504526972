package kopiarepo

import (
	"context"
	"fmt"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/snapshot"
)

// SnapshotInfo is one of cairn's snapshots in the repository.
type SnapshotInfo struct {
	ID       string `json:"id"`
	Backup   string `json:"backup"`
	Volume   string `json:"volume"`
	Complete bool   `json:"complete"`
	Bytes    int64  `json:"bytes"`
}

// BackupSnapshots lists the snapshots (checkpoints included) a backup
// wrote.
func (r *Repository) BackupSnapshots(ctx context.Context, backup string) ([]SnapshotInfo, error) {
	ids, err := snapshot.ListSnapshotManifests(ctx, r.Repository, nil, map[string]string{tagBackup: backup})
	if err != nil {
		return nil, fmt.Errorf("list snapshots of backup %s: %w", backup, err)
	}
	mans, err := snapshot.LoadSnapshots(ctx, r.Repository, ids)
	if err != nil {
		return nil, fmt.Errorf("load snapshots of backup %s: %w", backup, err)
	}
	out := make([]SnapshotInfo, 0, len(mans))
	for _, m := range mans {
		out = append(out, SnapshotInfo{ID: string(m.ID), Backup: backup, Volume: m.Tags[tagVolume],
			Complete: m.IncompleteReason == "", Bytes: snapshotBytes(m)})
	}
	return out, nil
}

// snapshotBytes is the size of the files a snapshot holds. A checkpoint
// has no upload stats; its root's summary counts the files it covers.
func snapshotBytes(m *snapshot.Manifest) int64 {
	if m.RootEntry != nil && m.RootEntry.DirSummary != nil {
		return m.RootEntry.DirSummary.TotalFileSize
	}
	return m.Stats.TotalFileSize
}

// DeleteBackupSnapshots deletes every snapshot the backup wrote. Their
// data goes at the next full maintenance, once no other snapshot shares
// it. Deleting what is already gone is no error.
func (r *Repository) DeleteBackupSnapshots(ctx context.Context, backup string) (int, error) {
	snaps, err := r.BackupSnapshots(ctx, backup)
	if err != nil || len(snaps) == 0 {
		return 0, err
	}
	err = repo.WriteSession(ctx, r.Repository, repo.WriteSessionOptions{Purpose: "cairn delete backup"},
		func(ctx context.Context, w repo.RepositoryWriter) error {
			for _, s := range snaps {
				if err := w.DeleteManifest(ctx, manifestID(s.ID)); err != nil {
					return fmt.Errorf("delete snapshot %s: %w", s.ID, err)
				}
			}
			return nil
		})
	if err != nil {
		return 0, err
	}
	return len(snaps), nil
}
