package datamover

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
)

// TestUploadIntoALocationWithoutARepositoryCreatesNone: a data mover only
// connects; a location the worker did not prepare is a non-retryable
// error, and still holds no repository after it.
func TestUploadIntoALocationWithoutARepositoryCreatesNone(t *testing.T) {
	dir := t.TempDir()
	cfg := kopiarepo.Config{Password: "pw", ConfigDir: filepath.Join(t.TempDir(), "kopia"), Hostname: "datamover"}
	a := &Activities{Path: t.TempDir(), Repository: cfg, Log: zap.NewNop()}
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(a.UploadVolume)
	_, err := env.ExecuteActivity(a.UploadVolume, v1alpha1.UploadVolumeInput{Backup: "b1", Location: "file://" + dir,
		Volume: v1alpha1.Volume{Namespace: "shop", Claim: "data"}})
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeVolumeDataMissing)

	cfg.Location, cfg.NoCreate, cfg.ConfigDir = "file://"+dir, true, filepath.Join(t.TempDir(), "inspector")
	_, err = kopiarepo.Open(context.Background(), cfg)
	require.ErrorIs(t, err, kopiarepo.ErrNoRepository)
}
