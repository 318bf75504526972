package kopiarepo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kopia/kopia/fs"
	"github.com/kopia/kopia/fs/localfs"
	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/manifest"
	"github.com/kopia/kopia/snapshot"
	"github.com/kopia/kopia/snapshot/policy"
	"github.com/kopia/kopia/snapshot/upload"

	"github.com/cairn-backup/cairn/internal/tick"
)

// Tag keys on cairn's snapshots. Kopia's own retention never runs on
// them (cairn does not apply retention policies), and they are pinned as
// well, so only deleting their backup removes them.
const (
	tagBackup = "tag:cairn-backup"
	tagVolume = "tag:cairn-volume"
	pin       = "cairn"
)

// Source names a volume in the repository: the same claim in every backup,
// whatever volume or mount path served its data, so a backup finds the
// previous snapshot of its volume as its parent.
func Source(namespace, claim string) snapshot.SourceInfo {
	return snapshot.SourceInfo{Host: "cairn", UserName: "volumes", Path: "/" + namespace + "/" + claim}
}

// UploadRequest is one volume's upload.
type UploadRequest struct {
	// Path is the directory holding the volume's data.
	Path string
	// Namespace and Claim identify the volume; Backup tags the snapshot.
	Namespace, Claim, Backup string
	// CheckpointInterval saves an incomplete snapshot this often, so an
	// upload cut short resumes without reading or sending that data again.
	CheckpointInterval time.Duration
	// Progress, when set, is called every ProgressInterval and at the end.
	Progress         func(UploadProgress)
	ProgressInterval time.Duration
	// OnCheckpoint, when set, is called once each checkpoint is durable,
	// on kopia's checkpoint goroutine; the upload goes on meanwhile.
	OnCheckpoint func(UploadProgress)
}

// firstFailure names the entry whose error stopped an upload (kopia
// cancels on the first, and says only "canceled"), or "".
func firstFailure(man *snapshot.Manifest) string {
	if man.RootEntry == nil || man.RootEntry.DirSummary == nil || len(man.RootEntry.DirSummary.FailedEntries) == 0 {
		return ""
	}
	f := man.RootEntry.DirSummary.FailedEntries[0]
	return fmt.Sprintf(" (%s: %s)", f.EntryPath, f.Error)
}

// UploadResult is what a finished upload recorded.
type UploadResult struct {
	SnapshotID string `json:"snapshotId"`
	// ParentID is the previous complete snapshot of the volume, empty on a
	// volume's first upload.
	ParentID    string         `json:"parentId,omitempty"`
	Checkpoints int            `json:"checkpoints,omitempty"`
	Bytes       int64          `json:"bytes"`
	Files       int64          `json:"files"`
	Dirs        int64          `json:"dirs"`
	Progress    UploadProgress `json:"progress"`
	Duration    time.Duration  `json:"duration"`
	// Reused says the backup's snapshot of this volume already existed: an
	// earlier attempt finished and saved it.
	Reused bool `json:"reused,omitempty"`
}

// Upload snapshots the directory into the repository. A complete snapshot
// of the same volume and backup is returned as it is (a retry after the
// save); otherwise the last complete snapshot and any checkpoints after it
// seed the upload, so unchanged files are neither read nor sent. The
// context cancels the upload; nothing is saved then but checkpoints.
func (r *Repository) Upload(ctx context.Context, req UploadRequest) (*UploadResult, error) {
	start := time.Now()
	src := Source(req.Namespace, req.Claim)
	if done, err := r.backupSnapshot(ctx, src, req.Backup); err != nil || done != nil {
		if done == nil {
			return nil, err
		}
		return &UploadResult{SnapshotID: string(done.ID), Bytes: done.Stats.TotalFileSize,
			Files: int64(done.Stats.TotalFileCount), Dirs: int64(done.Stats.TotalDirectoryCount), Reused: true}, nil
	}
	dir, err := localfs.Directory(req.Path)
	if err != nil {
		return nil, fmt.Errorf("volume data at %s: %w", req.Path, err)
	}
	return r.upload(ctx, req, src, dir, start)
}

// upload is Upload of a source kopia already opened (a test serves one
// through a gate).
func (r *Repository) upload(ctx context.Context, req UploadRequest, src snapshot.SourceInfo, dir fs.Directory, start time.Time) (*UploadResult, error) {
	var res *UploadResult
	prog := &counter{onCheckpoint: req.OnCheckpoint}
	// Kopia reports bytes written to storage through the write session,
	// not the uploader.
	opts := repo.WriteSessionOptions{Purpose: "cairn volume upload", OnUpload: prog.UploadedBytes}
	stop := reportProgress(prog, req)
	defer stop()
	err := repo.WriteSession(ctx, r.Repository, opts, func(ctx context.Context, w repo.RepositoryWriter) error {
		var werr error
		res, werr = upload1(ctx, w, dir, src, req, prog)
		return werr
	})
	if err != nil {
		return nil, err
	}
	// The session's flush uploads the last packs: count them too.
	res.Progress, res.Duration = prog.snapshot(), time.Since(start)
	if req.Progress != nil {
		req.Progress(res.Progress)
	}
	return res, nil
}

func upload1(ctx context.Context, w repo.RepositoryWriter, dir fs.Directory, src snapshot.SourceInfo, req UploadRequest, prog *counter) (*UploadResult, error) {
	previous, err := snapshot.FindPreviousManifests(ctx, w, src, nil)
	if err != nil {
		return nil, fmt.Errorf("find previous snapshots: %w", err)
	}
	policyTree, err := policy.TreeForSource(ctx, w, src)
	if err != nil {
		return nil, fmt.Errorf("policy for %s: %w", src, err)
	}
	gate := newUploaderGate(w)
	u := upload.NewUploader(watchCheckpoints(gate, prog))
	u.Progress = prog
	u.FailFast = true
	if req.CheckpointInterval > 0 {
		u.CheckpointInterval = min(req.CheckpointInterval, upload.DefaultCheckpointInterval)
	}
	u.CheckpointLabels = map[string]string{tagBackup: req.Backup}

	// Kopia checks its own flag, not the context, between files.
	stopCancel := context.AfterFunc(ctx, u.Cancel)
	man, err := u.Upload(ctx, dir, policyTree, src, previous...)
	stopCancel()
	// A checkpoint under way when Upload returned ends before the session
	// does, and none starts after: it would race the final snapshot.
	<-gate.end()
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", req.Path, err)
	}
	if err := ctx.Err(); err != nil || man.IncompleteReason != "" {
		return nil, errors.Join(fmt.Errorf("upload of %s stopped: %s%s", req.Path, man.IncompleteReason, firstFailure(man)), err)
	}
	man.Tags = map[string]string{tagBackup: req.Backup, tagVolume: req.Namespace + "/" + req.Claim}
	man.UpdatePins([]string{pin}, nil)
	id, err := snapshot.SaveSnapshot(ctx, w, man)
	if err != nil {
		return nil, fmt.Errorf("save snapshot: %w", err)
	}
	res := &UploadResult{SnapshotID: string(id), Bytes: man.Stats.TotalFileSize,
		Files: int64(man.Stats.TotalFileCount), Dirs: int64(man.Stats.TotalDirectoryCount)}
	for _, p := range previous {
		if p.IncompleteReason == "" {
			res.ParentID = string(p.ID)
			continue
		}
		res.Checkpoints++
		// The new snapshot holds everything a checkpoint did.
		if err := w.DeleteManifest(ctx, p.ID); err != nil {
			return nil, fmt.Errorf("delete checkpoint %s: %w", p.ID, err)
		}
	}
	return res, nil
}

// reportProgress calls req.Progress on its interval until stopped: the
// final flush of a session can take long on slow storage, and it counts
// as progress too.
func reportProgress(prog *counter, req UploadRequest) (stop func()) {
	every := req.ProgressInterval
	if every <= 0 {
		every = 5 * time.Second
	}
	return tick.Every(every, func() {
		if req.Progress != nil {
			req.Progress(prog.snapshot())
		}
	})
}

// backupSnapshot is the complete snapshot of the volume that the backup
// already saved, or nil.
func (r *Repository) backupSnapshot(ctx context.Context, src snapshot.SourceInfo, backup string) (*snapshot.Manifest, error) {
	ids, err := snapshot.ListSnapshotManifests(ctx, r.Repository, &src, map[string]string{tagBackup: backup})
	if err != nil {
		return nil, fmt.Errorf("list snapshots of %s: %w", src, err)
	}
	mans, err := snapshot.LoadSnapshots(ctx, r.Repository, ids)
	if err != nil {
		return nil, fmt.Errorf("load snapshots of %s: %w", src, err)
	}
	for _, m := range mans {
		if m.IncompleteReason == "" {
			return m, nil
		}
	}
	return nil, nil
}

// manifestID is kopia's ID type for a snapshot ID string.
func manifestID(id string) manifest.ID { return manifest.ID(id) }
