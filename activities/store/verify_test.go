package store

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
)

func (f *fixture) verify(t *testing.T, backup string) (*v1alpha1.VerifyBackupResult, error) {
	t.Helper()
	return activitytest.Run[v1alpha1.VerifyBackupResult](t, f.env, f.acts.VerifyBackupData,
		v1alpha1.VerifyBackupRequest{Backup: backup, Location: f.url})
}

// A committed backup verifies; a flipped byte, a cut object and a
// missing one are each named, and nothing else is.
func TestVerifyNamesWhatDiffersFromTheManifest(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	_, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)

	res, err := f.verify(t, "b1")
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res)
	assert.Equal(t, 3, res.Objects)
	assert.Positive(t, res.Bytes)

	tarball := filepath.Join(f.dir, b1.Resources())
	data, err := os.ReadFile(tarball)
	require.NoError(t, err)
	data[len(data)/2] ^= 1
	require.NoError(t, os.WriteFile(tarball, data, 0o600))
	results := filepath.Join(f.dir, b1.Results())
	data, err = os.ReadFile(results)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(results, data[:len(data)-3], 0o600))
	require.NoError(t, os.Remove(filepath.Join(f.dir, b1.Logs())))

	res, err = f.verify(t, "b1")
	require.NoError(t, err, "what differs is the verdict, not an error")
	assert.False(t, res.OK())
	assert.ElementsMatch(t, []string{"resources.tar.gz: SHA-256 differs",
		"results.json: " + itoa(len(data)-3) + " bytes, not " + itoa(len(data)), "logs.jsonl.gz: missing"}, res.Differ)
}

// A backup that is not there is an error; one without a manifest is a
// verdict that nothing was checked.
func TestVerifyWithoutABackupOrAManifest(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.verify(t, "missing")
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeBackupNotFound)

	f.writeJSON(t, b1.Metadata(), v1alpha1.BackupMetadata{Name: "b1", Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted}})
	res, err := f.verify(t, "b1")
	require.NoError(t, err)
	assert.False(t, res.Manifest)
	assert.False(t, res.OK())
	assert.Zero(t, res.Objects)
}

func itoa(n int) string { return strconv.Itoa(n) }
