package kopiarepo

import (
	"testing"

	"github.com/kopia/kopia/fs"
	"github.com/kopia/kopia/snapshot"
	"github.com/stretchr/testify/assert"
)

// TestFirstFailureNamesTheEntry: kopia stops an upload at its first
// failed entry and says only "canceled"; the error names the entry.
func TestFirstFailureNamesTheEntry(t *testing.T) {
	man := &snapshot.Manifest{RootEntry: &snapshot.DirEntry{DirSummary: &fs.DirectorySummary{FailedEntries: []*fs.EntryWithError{
		{EntryPath: "small/file-0007.txt", Error: "open /data/small/file-0007.txt: permission denied"},
		{EntryPath: "small/file-0009.txt", Error: "later"},
	}}}}
	assert.Equal(t, " (small/file-0007.txt: open /data/small/file-0007.txt: permission denied)", firstFailure(man))
	assert.Empty(t, firstFailure(&snapshot.Manifest{}))
}
