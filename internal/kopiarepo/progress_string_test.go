package kopiarepo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUploadProgressNamesTheCheckpoint(t *testing.T) {
	p := UploadProgress{HashedBytes: 1 << 30, CachedBytes: 1 << 29, UploadedBytes: 300 << 20, TotalBytes: 3 << 30}
	assert.Equal(t, "uploading: 1.5 GiB of 3.0 GiB (50%), 300 MiB sent", p.String())
	p.Checkpoints, p.CheckpointedBytes = 2, 1<<30
	assert.Equal(t, "uploading: 1.5 GiB of 3.0 GiB (50%), 300 MiB sent, checkpoint at 1.0 GiB", p.String())
	p.TotalBytes = 0
	assert.Equal(t, "uploading: 1.5 GiB read, 300 MiB sent, checkpoint at 1.0 GiB", p.String())
}
