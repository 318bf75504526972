package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestChecksumsFindCorruptBackups: three committed backups are damaged
// in the location: one byte of a tarball flipped, another tarball cut
// short, a third replaced by another backup's tarball, which decodes
// fine. `cairn backup verify` names each object that differs (exit 6)
// and passes the untouched one; a restore of any damaged one fails with
// CorruptBackup, which only the manifest can tell for the swapped one.
func TestChecksumsFindCorruptBackups(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	s.startWorker()
	seedConfigMaps(t, s.cluster.Config(), "ck", 2, 20)
	for _, name := range []string{"ck-good", "ck-flip", "ck-cut", "ck-swap"} {
		s.backup(v1alpha1.BackupSpec{Name: name, IncludedNamespaces: []string{"ck-*"}})
	}
	stdout, stderr, code := s.cli("backup", "verify", "ck-good")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Backup ck-good verified")
	recordHistory(t, s, v1alpha1.VerifyWorkflowID("ck-good"), "verify_backup_completed.json")

	root := s.locationDir()
	tarball := func(name string) string { return filepath.Join(root, location.Backup(name).Resources()) }
	data, err := os.ReadFile(tarball("ck-flip"))
	require.NoError(t, err)
	data[len(data)/2] ^= 0x01
	require.NoError(t, os.WriteFile(tarball("ck-flip"), data, 0o600))
	data, err = os.ReadFile(tarball("ck-cut"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tarball("ck-cut"), data[:len(data)/2], 0o600))
	data, err = os.ReadFile(tarball("ck-good"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tarball("ck-swap"), data, 0o600))

	for _, name := range []string{"ck-flip", "ck-cut", "ck-swap"} {
		stdout, stderr, code := s.cli("backup", "verify", name)
		assert.Equal(t, starter.ExitFailed, code, "%s: %s %s", name, stdout, stderr)
		assert.Contains(t, stdout, "Backup "+name+" is not whole: resources.tar.gz")
	}
	stdout, _, _ = s.cli("backup", "verify", "ck-cut", "-o", "json")
	var res v1alpha1.VerifyBackupResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Differ, 1)
	assert.Regexp(t, `^resources.tar.gz: \d+ bytes, not \d+$`, res.Differ[0], "a cut is told by its size")

	for _, name := range []string{"ck-flip", "ck-cut", "ck-swap"} {
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "r-" + name, BackupName: name,
			NamespaceMapping: map[string]string{"ck-00": "r-" + name + "-00", "ck-01": "r-" + name + "-01"}}}, 2*time.Minute)
		assert.Equal(t, v1alpha1.PhaseFailed, v.Phase, name)
		assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeCorruptBackup, name)
	}
	v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "r-ck-good", BackupName: "ck-good",
		NamespaceMapping: map[string]string{"ck-00": "r-good-00", "ck-01": "r-good-01"}}}, 2*time.Minute)
	assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "the untouched backup restores: %+v", v.Status)
}
