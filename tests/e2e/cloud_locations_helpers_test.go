package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// assertListedFromFreshTemporal: a fresh Temporal, which never ran the
// backup, lists it Completed from the catalog's locations alone.
func assertListedFromFreshTemporal(t *testing.T, catalog *location.Catalog, opener *location.Opener, backup string) {
	t.Helper()
	addr := freePort(t)
	startProc(t, "temporal-fresh", "dev", "--no-worker", "--no-api", "--ui-address", "", "--data-dir", t.TempDir(), "--temporal-address", addr)
	list, err := starter.New(waitTemporal(t, addr), starter.Options{Locations: catalog, Opener: opener}).ListBackups(context.Background())
	require.NoError(t, err)
	require.Empty(t, list.Unreadable)
	for _, b := range list.Items {
		if b.Name == backup {
			assert.Equal(t, v1alpha1.PhaseCompleted, b.Phase)
			assert.Equal(t, starter.SourceLocation, b.Source)
			return
		}
	}
	t.Errorf("backup %s is not listed from its location: %+v", backup, list.Items)
}

// assertExpiresFrom: a backup of one namespace's ConfigMaps into url
// with a one-second TTL is deleted, with every object it wrote, by the
// location's expiry run once its expiry has passed, and nothing else
// there is.
func assertExpiresFrom(t *testing.T, s *stack, url, name, namespace string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: name,
		IncludedNamespaces: []string{namespace}, IncludedResources: []string{"configmaps"}, StorageLocation: url,
		TTL: &metav1.Duration{Duration: time.Second}}})
	require.NoError(t, err)
	require.NoError(t, s.temporalC.GetWorkflow(ctx, v1alpha1.BackupWorkflowID(name), "").Get(ctx, nil))
	v, err := s.starter.GetBackup(ctx, name)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	require.NotNil(t, v.Status.Expiration)
	for time.Now().Before(*v.Status.Expiration) { // the expiry date itself, not a guess at how long a backup takes
		time.Sleep(100 * time.Millisecond)
	}

	run, err := s.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "expire-" + name, TaskQueue: v1alpha1.TaskQueue},
		v1alpha1.ExpireBackupsWorkflowName, v1alpha1.ExpireBackupsRequest{Location: url})
	require.NoError(t, err)
	var res v1alpha1.ExpireBackupsResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, []string{name}, res.Deleted, "only the expired backup")
	loc, err := s.locations.Open(ctx, url)
	require.NoError(t, err)
	defer loc.Close()
	keys, err := loc.Keys(ctx, location.Backup(name).Prefix())
	require.NoError(t, err)
	assert.Empty(t, keys, "the expired backup's objects are gone")
}

// maintainFully runs full kopia maintenance of the repository in url.
func maintainFully(t *testing.T, s *stack, url string) {
	t.Helper()
	ctx := context.Background()
	run, err := s.temporalC.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "maintenance-" + t.Name(), TaskQueue: v1alpha1.TaskQueue},
		v1alpha1.RepositoryMaintenanceWorkflowName, v1alpha1.MaintenanceRequest{Location: url, Mode: "full"})
	require.NoError(t, err)
	var maint v1alpha1.MaintenanceResult
	require.NoError(t, run.Get(ctx, &maint))
	assert.True(t, maint.Ran)
}

// assertListedPastOnePage: 1,005 backups in url, more than S3 and GCS
// list in one page, are all listed; they are deleted after.
func assertListedPastOnePage(t *testing.T, s *stack, catalog *location.Catalog, opener *location.Opener, url string) {
	t.Helper()
	ctx := context.Background()
	loc, err := opener.Open(ctx, url)
	require.NoError(t, err)
	defer loc.Close()
	const n = 1005
	for i := range n {
		name := fmt.Sprintf("page-%04d", i)
		require.NoError(t, loc.WriteJSON(ctx, location.Backup(name).Metadata(), v1alpha1.BackupMetadata{Name: name,
			Format: v1alpha1.BackupFormatCairn, Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted}}))
	}
	list, err := starter.New(s.temporalC, starter.Options{Locations: catalog, Opener: opener}).ListBackups(ctx)
	require.NoError(t, err)
	listed := 0
	for _, b := range list.Items {
		if strings.HasPrefix(b.Name, "page-") {
			listed++
		}
	}
	assert.Equal(t, n, listed)
	for i := range n {
		require.NoError(t, loc.DeletePrefix(ctx, location.Backup(fmt.Sprintf("page-%04d", i)).Prefix(), nil))
	}
}
