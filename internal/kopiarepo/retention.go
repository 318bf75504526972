package kopiarepo

import (
	"context"
	"errors"
	"fmt"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/format"

	"github.com/cairn-backup/cairn/internal/location"
)

// retention is the blob retention kopia writes with in an immutable
// location, zero for others.
func retention(lock *location.Lock) format.BlobStorageConfiguration {
	if lock == nil {
		return format.BlobStorageConfiguration{}
	}
	return format.BlobStorageConfiguration{RetentionMode: blob.RetentionMode(lock.Mode), RetentionPeriod: lock.Period}
}

// applyRetention makes an existing repository lock its blobs as its
// location now says: a location declared immutable after its repository
// was made. It reports whether the repository changed, and must be
// opened again for its writes to lock.
func applyRetention(ctx context.Context, r repo.Repository, lock *location.Lock) (bool, error) {
	want := retention(lock)
	if !want.IsRetentionEnabled() {
		return false, nil
	}
	dr, ok := r.(repo.DirectRepository)
	if !ok {
		return false, errors.New("object lock needs a direct repository connection")
	}
	fm := dr.FormatManager()
	have, err := fm.BlobCfgBlob(ctx)
	if err != nil {
		return false, fmt.Errorf("read the repository's blob retention: %w", err)
	}
	if have == want {
		return false, nil
	}
	mp, err := fm.GetMutableParameters(ctx)
	if err != nil {
		return false, fmt.Errorf("read the repository's parameters: %w", err)
	}
	features, err := fm.RequiredFeatures(ctx)
	if err != nil {
		return false, fmt.Errorf("read the repository's features: %w", err)
	}
	if err := fm.SetParameters(ctx, mp, want, features); err != nil {
		return false, fmt.Errorf("set the repository's blob retention to %s: %w", lock, err)
	}
	return true, nil
}
