package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// TestImmutableBackupsWaitForTheirLock: a backup whose object lock has not
// ended is neither listed as expired nor deletable (a non-retryable
// Immutable error naming the date); once the lock ends, it is both.
func TestImmutableBackupsWaitForTheirLock(t *testing.T) {
	acts, logs := observed()
	f := newFixture(t, acts)
	now := time.Now()
	expired, lockEnds := now.Add(-time.Hour), now.Add(time.Hour)
	f.writeJSON(t, location.Backup("locked").Metadata(), v1alpha1.BackupMetadata{Name: "locked", ImmutableUntil: &lockEnds,
		Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted, Expiration: &expired}})
	f.writeJSON(t, location.Backup("free").Metadata(), v1alpha1.BackupMetadata{Name: "free",
		Status: v1alpha1.BackupStatus{Phase: v1alpha1.PhaseCompleted, Expiration: &expired}})
	req := v1alpha1.DeleteBackupRequest{Backup: "locked", Location: f.url}

	acts.Now = func() time.Time { return now }
	assert.Equal(t, []string{"free"}, f.listExpired(t, acts.ListExpiredBackups))
	assert.Len(t, logs.FilterMessage("Expired backup is immutable; kept until its lock ends").All(), 1)
	_, err := f.env.ExecuteActivity(acts.CheckBackupDeletable, req)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, v1alpha1.ErrTypeImmutable, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Error(), "backup locked is immutable until "+lockEnds.UTC().Format(time.RFC3339))

	acts.Now = func() time.Time { return lockEnds.Add(time.Second) }
	assert.Equal(t, []string{"free", "locked"}, f.listExpired(t, acts.ListExpiredBackups))
	_, err = f.env.ExecuteActivity(acts.CheckBackupDeletable, req)
	assert.NoError(t, err)
}
