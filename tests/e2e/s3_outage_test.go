package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// TestFinalizeWaitsForTheObjectStore kills the S3 server (MinIO) while a
// backup into it finalizes: the worker, caught frozen inside
// FinalizeBackup, fails against the dead store and retries, the backup
// stays Running with its step's last error in describe, and once the
// store is back on the same data the backup completes with every object
// exactly once.
func TestFinalizeWaitsForTheObjectStore(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	store := startMinIO(t, "outage-admin", "outage-secret-1")
	url := store.bucket("cairn-outage")
	spec := "outage=" + url + ";credentials=" + store.credentialsDir()
	catalog, err := location.ParseCatalog(s.location, []string{spec}, false)
	require.NoError(t, err)
	s.locations = &location.Opener{CredentialDirs: catalog.CredentialDirs()}
	s.starter = starter.New(s.temporalC, starter.Options{DefaultLocation: s.location, Opener: s.locations})
	want := seedConfigMaps(t, s.cluster.Config(), "so", seedNamespaces, 50)
	w := s.startWorker("--location-name", spec)

	var name string
	catchInNewRun(t, s, w, finalizeBackupActivity, func(try int) string {
		name = fmt.Sprintf("outage-%d", try)
		_, err := s.starter.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
			Name: name, IncludedNamespaces: []string{"so-*"}, StorageLocation: url}})
		require.NoError(t, err)
		return v1alpha1.BackupWorkflowID(name)
	})
	store.proc.kill()
	w.thaw()

	// The event: finalize failed against the dead store and waits for
	// another attempt.
	step := waitRetrying(t, s, name, finalizeBackupActivity)
	v, err := s.starter.GetBackup(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.PhaseFinalizing, v.Phase, "nothing is committed while the store is down")
	t.Logf("while the store is down: %+v", step)

	store.start()
	v = s.waitDone(name, 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID(name), finalizeBackupActivity), int32(1),
		"the outage landed mid-step: FinalizeBackup ran again")
	assertExactlySeededAt(t, s, url, name, "so", want)
	assert.Contains(t, store.keys("cairn-outage", "backups/"+name+"/"), "backups/"+name+"/backup.json")
}
