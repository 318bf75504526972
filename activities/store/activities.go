// Package store holds the activities that only touch the backup location:
// finalize (assemble the tarball, write results, logs and backup.json
// last) and cleanup of a backup's intermediate state.
package store

import "go.uber.org/zap"

// Activities are the location-only activities.
type Activities struct {
	Log *zap.Logger
}
