// Package store holds the activities that only touch the backup location:
// finalize (assemble the tarball, write results, logs and backup.json
// last), cleanup of a backup's intermediate state, and deletion of
// backups, by request or on expiry.
package store

import (
	"time"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/location"
)

// Activities are the location-only activities.
type Activities struct {
	Log *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// DeleteInterval is a pause after every deleted object, to spare an
	// object store that throttles deletes (0: no pause).
	DeleteInterval time.Duration
	// Now is the clock expiry and the object lock are judged by (nil: the
	// system's).
	Now func() time.Time
	// Registered are the extensions a deleted backup's items are sent to
	// (their delete selectors); Extensions makes the calls.
	Registered []v1alpha1.Extension
	Extensions extcall.Caller
}
