package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestVerdictIsOneReadableLine(t *testing.T) {
	ok := &v1alpha1.VerifyBackupResult{Backup: "b1", Manifest: true, Objects: 3, Bytes: 1200,
		VolumeData: &v1alpha1.VolumeDataVerified{Snapshots: 1, Files: 10, Bytes: 5000, ReadBytes: 250}}
	assert.Equal(t, "Backup b1 verified: 3 objects, 1200 bytes, all as its manifest says; volume data whole: 1 snapshots, 10 files, 250 of 5000 bytes read back.", verdict(ok))
	assert.Contains(t, verdict(&v1alpha1.VerifyBackupResult{Backup: "v1"}), "has no manifest")

	bad := &v1alpha1.VerifyBackupResult{Backup: "b2", Manifest: true, Differ: []string{"resources.tar.gz: SHA-256 differs"},
		VolumeData: &v1alpha1.VolumeDataVerified{Errors: []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7"}}}
	line := verdict(bad)
	assert.NotContains(t, line, "\n")
	assert.True(t, strings.HasPrefix(line, "Backup b2 is not whole: resources.tar.gz: SHA-256 differs; volume data: e1;"), line)
	assert.Contains(t, line, "and 3 more (-o json lists them)")
}
