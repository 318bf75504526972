package repository

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/location"
)

const password = "correct horse battery staple"

// fixture is a file location in a temporary directory, the repository
// activities of a worker called worker-a, and an activity environment
// that runs them.
type fixture struct {
	dir, url string
	loc      *location.Location
	acts     *Activities
	env      *testsuite.TestActivityEnvironment
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, url: "file://" + dir}
	loc, err := location.OpenPlain(context.Background(), f.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	f.loc = loc
	f.acts = f.worker(t, "worker-a", password)
	f.env = f.newEnv(f.acts)
	return f
}

// worker is the repository activities of a worker with its own kopia
// config directory.
func (f *fixture) worker(t *testing.T, hostname, password string) *Activities {
	return &Activities{Log: zap.NewNop(), Repository: kopiarepo.Config{Password: password,
		ConfigDir: filepath.Join(t.TempDir(), "kopia"), Hostname: hostname}}
}

func (f *fixture) newEnv(acts *Activities) *testsuite.TestActivityEnvironment {
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return env
}

// open connects to the location's repository as a client of its own,
// creating the repository when there is none.
func (f *fixture) open(t *testing.T, cfg kopiarepo.Config) (*kopiarepo.Repository, error) {
	t.Helper()
	cfg.Location = f.url
	if cfg.ConfigDir == "" {
		cfg.ConfigDir = filepath.Join(t.TempDir(), "kopia")
	}
	r, err := kopiarepo.Open(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { _ = r.Close(context.Background()) })
	}
	return r, err
}

// upload moves a small data set into the repository as backup's snapshot
// of shop/claim, as a data mover does.
func (f *fixture) upload(t *testing.T, backup, claim string, seed uint64) string {
	t.Helper()
	src := t.TempDir()
	_, err := datatree.Write(src, datatree.Spec{SmallFiles: 5, SmallSize: 2000, Seed: seed, NoSparse: true})
	require.NoError(t, err)
	r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "datamover"})
	require.NoError(t, err)
	res, err := r.Upload(context.Background(), kopiarepo.UploadRequest{Path: src, Namespace: "shop", Claim: claim, Backup: backup})
	require.NoError(t, err)
	require.NoError(t, r.Close(context.Background()))
	return res.SnapshotID
}

// recordVolumes writes backup's volumes.json: one record per claim, with
// the upload when uploads has its snapshot.
func (f *fixture) recordVolumes(t *testing.T, backup string, uploads map[string]string, claims ...string) {
	t.Helper()
	var vf v1alpha1.VolumesFile
	for _, c := range claims {
		rec := v1alpha1.VolumeRecord{Volume: v1alpha1.Volume{Namespace: "shop", Claim: c}}
		if id, ok := uploads[c]; ok {
			rec.Upload = &v1alpha1.DataUploadInfo{SnapshotID: id}
		}
		vf.Volumes = append(vf.Volumes, rec)
	}
	require.NoError(t, f.loc.WriteJSON(context.Background(), location.Backup(backup).Volumes(), vf))
}

// snapshotsOf lists backup's snapshots through a fresh connection.
func (f *fixture) snapshotsOf(t *testing.T, backup string) []kopiarepo.SnapshotInfo {
	t.Helper()
	r, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "inspector", NoCreate: true})
	require.NoError(t, err)
	snaps, err := r.BackupSnapshots(context.Background(), backup)
	require.NoError(t, err)
	return snaps
}

// requireNoRepository asserts the location still holds no repository.
func (f *fixture) requireNoRepository(t *testing.T) {
	t.Helper()
	_, err := f.open(t, kopiarepo.Config{Password: password, Hostname: "inspector", NoCreate: true})
	require.ErrorIs(t, err, kopiarepo.ErrNoRepository)
}

func deleteVolumeData(env *testsuite.TestActivityEnvironment, acts *Activities, in v1alpha1.DeleteVolumeDataInput) (*v1alpha1.DeleteVolumeDataResult, error) {
	val, err := env.ExecuteActivity(acts.DeleteVolumeData, in)
	if err != nil {
		return nil, err
	}
	var res v1alpha1.DeleteVolumeDataResult
	return &res, val.Get(&res)
}

func maintain(env *testsuite.TestActivityEnvironment, acts *Activities, in v1alpha1.MaintenanceRequest) (*v1alpha1.MaintenanceResult, error) {
	val, err := env.ExecuteActivity(acts.MaintainRepository, in)
	if err != nil {
		return nil, err
	}
	var res v1alpha1.MaintenanceResult
	return &res, val.Get(&res)
}
