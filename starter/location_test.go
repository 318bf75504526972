package starter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	velerofixture "github.com/cairn-backup/cairn/tests/fixtures/velero"
)

// veleroLocation holds a cairn backup, two Velero backups (one still being
// written), a folder with no metadata and an unreadable Velero backup.
func veleroLocation(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	loc, err := location.OpenPlain(ctx, dir)
	require.NoError(t, err)
	defer loc.Close()
	started := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, loc.WriteJSON(ctx, location.Backup("cairn-one").Metadata(), v1alpha1.BackupMetadata{
		APIVersion: v1alpha1.MetadataAPIVersion, Kind: v1alpha1.MetadataKindBackup, Name: "cairn-one",
		Status: v1alpha1.BackupStatus{Name: "cairn-one", Phase: v1alpha1.PhaseCompleted, StartTime: &started},
	}))
	cm := velerofixture.Object{GroupResource: "configmaps", Namespace: "shop", Name: "c", Preferred: "v1",
		Versions: map[string][]byte{"v1": []byte(`{}`)}}
	require.NoError(t, velerofixture.Write(ctx, dir, velerofixture.Backup{Name: "velero-one",
		Start: started.Add(time.Hour), Objects: []velerofixture.Object{cm}}))
	require.NoError(t, velerofixture.Write(ctx, dir, velerofixture.Backup{Name: "velero-running", Phase: "InProgress",
		Start: started.Add(2 * time.Hour)}))
	require.NoError(t, loc.WriteAll(ctx, location.Backup("half").VeleroResources(), []byte("x")))
	require.NoError(t, loc.WriteAll(ctx, location.Backup("broken").VeleroMetadata(), []byte("{")))
	return dir
}

func TestListBackupsIncludesVelero(t *testing.T) {
	tc := mocks.NewClient(t)
	tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(&workflowservice.ListWorkflowExecutionsResponse{}, nil)
	// No QueryWorkflow is expected: a Velero backup still being written
	// has no run to ask, and the mock fails on any unexpected call.
	dir := veleroLocation(t)
	list, err := New(tc, Options{DefaultLocation: dir}).ListBackups(context.Background())
	require.NoError(t, err)

	var names, formats []string
	var phases []v1alpha1.Phase
	for _, v := range list.Items {
		names = append(names, v.Name)
		formats = append(formats, v.Format)
		phases = append(phases, v.Phase)
		assert.Equal(t, SourceLocation, v.Source)
	}
	assert.Equal(t, []string{"velero-running", "velero-one", "cairn-one"}, names, "newest first")
	assert.Equal(t, []string{"velero", "velero", "cairn"}, formats)
	assert.Equal(t, []v1alpha1.Phase{v1alpha1.PhaseInProgress, v1alpha1.PhaseCompleted, v1alpha1.PhaseCompleted}, phases)
	require.Len(t, list.Unreadable, 1)
	assert.Contains(t, list.Unreadable[0], "broken: ")
	assert.Contains(t, list.Unreadable[0], "velero-backup.json")
}

func TestGetBackupFindsVelero(t *testing.T) {
	tc := mocks.NewClient(t)
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(nil, serviceerror.NewNotFound("no such workflow"))
	dir := veleroLocation(t)
	c := New(tc, Options{DefaultLocation: dir})

	v, err := c.GetBackup(context.Background(), "velero-one")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupFormatVelero, v.Format)
	assert.Equal(t, v1alpha1.PhaseCompleted, v.Phase)
	assert.Equal(t, 1, v.Status.ItemsDone)
	assert.Equal(t, []string{"*"}, v.Spec.IncludedNamespaces)

	_, err = c.GetBackup(context.Background(), "half")
	assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
}

func TestCreateBackupRefusesVeleroName(t *testing.T) {
	dir := veleroLocation(t)
	_, err := New(mocks.NewClient(t), Options{DefaultLocation: dir}).CreateBackup(context.Background(),
		CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: "velero-one"}})
	var conflict *ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Contains(t, conflict.Message, "Velero backup")
}

// With a catalog, the list covers every location: the default's backups
// and the other locations', with what cannot be read named by location.
func TestListBackupsCoversEveryLocation(t *testing.T) {
	tc := mocks.NewClient(t)
	tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(&workflowservice.ListWorkflowExecutionsResponse{}, nil)
	ctx := context.Background()
	home := t.TempDir()
	loc, err := location.OpenPlain(ctx, home)
	require.NoError(t, err)
	started := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, loc.WriteJSON(ctx, location.Backup("at-home").Metadata(), v1alpha1.BackupMetadata{
		APIVersion: v1alpha1.MetadataAPIVersion, Kind: v1alpha1.MetadataKindBackup, Name: "at-home",
		Status: v1alpha1.BackupStatus{Name: "at-home", Phase: v1alpha1.PhaseCompleted, StartTime: &started},
	}))
	require.NoError(t, loc.Close())
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o600))
	catalog, err := location.ParseCatalog("file://"+home, []string{"offsite=file://" + veleroLocation(t), "lost=file://" + notADir + "/sub"}, false)
	require.NoError(t, err)

	list, err := New(tc, Options{Locations: catalog}).ListBackups(ctx)
	require.NoError(t, err)
	byName := map[string]string{}
	for _, v := range list.Items {
		byName[v.Name] = v.Location
	}
	assert.Contains(t, byName["at-home"], home)
	assert.Contains(t, byName["velero-one"], "file://", "the offsite location's backups are listed")
	assert.NotContains(t, byName["velero-one"], home)
	require.Len(t, list.Unreadable, 2)
	assert.Contains(t, list.Unreadable[0]+list.Unreadable[1], "location offsite: broken: ")
	assert.Contains(t, list.Unreadable[0]+list.Unreadable[1], "location lost: ")
}
