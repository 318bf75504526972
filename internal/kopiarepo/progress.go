package kopiarepo

import (
	"fmt"
	"sync/atomic"

	"github.com/dustin/go-humanize"

	"github.com/kopia/kopia/snapshot/upload"
)

// UploadProgress is where an upload stands. Bytes and files it counts
// are of this attempt: a retry that finds them in a checkpoint counts
// them as cached, not hashed or uploaded.
type UploadProgress struct {
	// HashedBytes were read and hashed; CachedBytes were found unchanged
	// in a previous snapshot or checkpoint and not read at all.
	HashedBytes int64 `json:"hashedBytes"`
	CachedBytes int64 `json:"cachedBytes"`
	// UploadedBytes were written to the repository storage (after
	// deduplication, compression and encryption).
	UploadedBytes int64 `json:"uploadedBytes"`
	// TotalBytes and TotalFiles are kopia's estimate of the source.
	TotalBytes int64 `json:"totalBytes"`
	TotalFiles int64 `json:"totalFiles"`
	// Files were finished, hashed or cached.
	Files int64 `json:"files"`
	// Checkpoints were saved by this attempt; the newest covers
	// CheckpointedBytes of the source, which a retry neither reads nor
	// sends again (as kopia counts it: a file caught mid-read counts
	// whole, though a retry reads it again).
	Checkpoints       int64 `json:"checkpoints,omitempty"`
	CheckpointedBytes int64 `json:"checkpointedBytes,omitempty"`
}

// Done is the share of the estimated bytes finished, 0 when unknown.
func (p UploadProgress) Done() float64 {
	if p.TotalBytes <= 0 {
		return 0
	}
	return min(1, float64(p.HashedBytes+p.CachedBytes)/float64(p.TotalBytes))
}

// counter collects an uploader's progress events into atomic counters,
// read by whoever reports progress.
type counter struct {
	upload.NullUploadProgress
	hashed, cached, uploaded, totalBytes, totalFiles, files atomic.Int64
	checkpoints, covered                                    atomic.Int64
	// onCheckpoint, when set, learns of each checkpoint once it is durable.
	onCheckpoint func(UploadProgress)
}

func (c *counter) Enabled() bool                   { return true }
func (c *counter) HashedBytes(n int64)             { c.hashed.Add(n) }
func (c *counter) CachedFile(_ string, size int64) { c.cached.Add(size) }
func (c *counter) UploadedBytes(n int64)           { c.uploaded.Add(n) }
func (c *counter) FinishedFile(string, error)      { c.files.Add(1) }
func (c *counter) EstimatedDataSize(files, bytes int64) {
	c.totalFiles.Store(files)
	c.totalBytes.Store(bytes)
}

func (c *counter) checkpointed(covered int64) {
	c.covered.Store(covered)
	c.checkpoints.Add(1)
	if c.onCheckpoint != nil {
		c.onCheckpoint(c.snapshot())
	}
}

func (c *counter) snapshot() UploadProgress {
	return UploadProgress{
		HashedBytes: c.hashed.Load(), CachedBytes: c.cached.Load(), UploadedBytes: c.uploaded.Load(),
		TotalBytes: c.totalBytes.Load(), TotalFiles: c.totalFiles.Load(), Files: c.files.Load(),
		Checkpoints: c.checkpoints.Load(), CheckpointedBytes: c.covered.Load(),
	}
}

// String reads "uploading: 1.2 GiB of 2.0 GiB (60%), 310 MiB sent,
// checkpoint at 1.0 GiB".
func (p UploadProgress) String() string {
	done := uint64(p.HashedBytes + p.CachedBytes)
	var s string
	if p.TotalBytes <= 0 {
		s = fmt.Sprintf("uploading: %s read, %s sent", humanize.IBytes(done), humanize.IBytes(uint64(p.UploadedBytes)))
	} else {
		s = fmt.Sprintf("uploading: %s of %s (%.0f%%), %s sent", humanize.IBytes(done), humanize.IBytes(uint64(p.TotalBytes)),
			100*p.Done(), humanize.IBytes(uint64(p.UploadedBytes)))
	}
	if p.Checkpoints > 0 {
		s += ", checkpoint at " + humanize.IBytes(uint64(p.CheckpointedBytes))
	}
	return s
}
