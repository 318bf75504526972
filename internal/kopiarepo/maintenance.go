package kopiarepo

import (
	"context"
	"errors"
	"fmt"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/maintenance"
	"github.com/kopia/kopia/snapshot/snapshotmaintenance"
)

// MaintenanceHostname is the client identity cairn's maintenance runs
// under, whichever worker runs it: kopia lets one owner maintain a
// repository, and a Temporal Schedule makes sure one run at a time does.
const MaintenanceHostname = "cairn-maintenance"

// ErrMaintenanceOwner is returned when another client owns the
// repository's maintenance (say a kopia command line someone connected).
var ErrMaintenanceOwner = errors.New("another kopia client owns this repository's maintenance")

// Maintain runs kopia's maintenance in mode "auto" (quick or full, as
// their cycles fall due), "quick" or "full". The first run makes cairn
// the owner. Full maintenance drops the data no snapshot references,
// after kopia's safety margins.
func (r *Repository) Maintain(ctx context.Context, mode string) error {
	dr, ok := r.Repository.(repo.DirectRepository)
	if !ok {
		return errors.New("maintenance needs a direct repository connection")
	}
	me := dr.ClientOptions().UsernameAtHost()
	return repo.DirectWriteSession(ctx, dr, repo.WriteSessionOptions{Purpose: "cairn maintenance"},
		func(ctx context.Context, w repo.DirectRepositoryWriter) error {
			params, err := maintenance.GetParams(ctx, w)
			if err != nil {
				return fmt.Errorf("maintenance parameters: %w", err)
			}
			stored := *params
			switch params.Owner {
			case me:
			case "":
				params.Owner = me
			default:
				return fmt.Errorf("%w: %s (cairn runs it as %s)", ErrMaintenanceOwner, params.Owner, me)
			}
			// In an immutable location, full maintenance extends the lock
			// of every blob the snapshots still use: a blob written for
			// an old backup and shared by a new one stays locked as long
			// as the new one.
			blobCfg, err := w.FormatManager().BlobCfgBlob(ctx)
			if err != nil {
				return fmt.Errorf("read the repository's blob retention: %w", err)
			}
			params.ExtendObjectLocks = blobCfg.IsRetentionEnabled()
			if params.Owner != stored.Owner || params.ExtendObjectLocks != stored.ExtendObjectLocks {
				if err := maintenance.SetParams(ctx, w, params); err != nil {
					return fmt.Errorf("set maintenance parameters: %w", err)
				}
			}
			if err := snapshotmaintenance.Run(ctx, w, maintenance.Mode(mode), false, maintenance.SafetyFull); err != nil {
				return fmt.Errorf("%s maintenance: %w", mode, err)
			}
			return nil
		})
}
