// Package repository holds the worker's activities on a location's kopia
// repository: creating it before a backup's first data mover, deleting a
// backup's volume data with the backup, and kopia maintenance.
package repository

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tick"
)

// Activities open repositories with Repository (Location comes per call).
type Activities struct {
	Repository kopiarepo.Config
	Log        *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per location, for EnsureRepository
}

// DeleteVolumeData deletes the kopia snapshots a backup's volumes were
// moved into (checkpoints included). A backup that moved no data, or a
// location without a repository, is left alone: nothing is opened or
// created. The data itself goes at the repository's next full
// maintenance, once no other backup shares it.
func (a *Activities) DeleteVolumeData(ctx context.Context, in v1alpha1.DeleteVolumeDataInput) (*v1alpha1.DeleteVolumeDataResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	moved, err := movedData(ctx, run.Loc, in.Backup)
	if err != nil || !moved {
		return &v1alpha1.DeleteVolumeDataResult{}, err
	}
	// Opening a large repository reads its indexes: heartbeat meanwhile.
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	cfg := a.Repository
	cfg.Location, cfg.NoCreate = in.Location, true
	repo, err := open(ctx, cfg)
	switch {
	case errors.Is(err, kopiarepo.ErrNoRepository):
		return &v1alpha1.DeleteVolumeDataResult{}, nil
	case err != nil:
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the deletions were flushed by their session
	n, err := repo.DeleteBackupSnapshots(ctx, in.Backup)
	if err != nil {
		return nil, fmt.Errorf("delete the volume data of backup %s: %w", in.Backup, err)
	}
	run.Log.Info("Deleted the backup's volume data snapshots", zap.Int("snapshots", n))
	return &v1alpha1.DeleteVolumeDataResult{Snapshots: n}, nil
}

// movedData says whether the backup's volumes.json records any upload.
func movedData(ctx context.Context, loc *location.Location, backup string) (bool, error) {
	vols, err := backupmeta.Volumes(ctx, loc, backup)
	if err != nil {
		return false, err
	}
	for _, v := range vols {
		if v.Upload != nil {
			return true, nil
		}
	}
	return false, nil
}

// MaintainRepository runs kopia maintenance on the location's repository
// under cairn's one maintenance identity, heartbeating while it runs. A
// location without a repository is left alone.
func (a *Activities) MaintainRepository(ctx context.Context, in v1alpha1.MaintenanceRequest) (*v1alpha1.MaintenanceResult, error) {
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	cfg := a.Repository
	cfg.Location, cfg.NoCreate, cfg.Hostname = in.Location, true, kopiarepo.MaintenanceHostname
	repo, err := open(ctx, cfg)
	switch {
	case errors.Is(err, kopiarepo.ErrNoRepository):
		return &v1alpha1.MaintenanceResult{Mode: in.Mode}, nil
	case err != nil:
		return nil, err
	}
	defer repo.Close(context.WithoutCancel(ctx)) //nolint:errcheck // maintenance flushed its session
	a.Log.Info("Maintaining the volume data repository", zap.String("location", repo.Location()), zap.String("mode", in.Mode))
	if err := repo.Maintain(ctx, in.Mode); err != nil {
		if errors.Is(err, kopiarepo.ErrMaintenanceOwner) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeMaintenanceOwner, nil)
		}
		return nil, err
	}
	return &v1alpha1.MaintenanceResult{Ran: true, Mode: in.Mode}, nil
}

// open opens a repository with cfg. A missing or wrong password is for a
// human to fix, not for a retry.
func open(ctx context.Context, cfg kopiarepo.Config) (*kopiarepo.Repository, error) {
	repo, err := kopiarepo.Open(ctx, cfg)
	if errors.Is(err, kopiarepo.ErrWrongPassword) || errors.Is(err, kopiarepo.ErrNoPassword) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeRepositoryPassword, nil)
	}
	return repo, err
}

// heartbeatWhileRunning heartbeats until stopped, three times per
// heartbeat timeout: opening a repository and kopia's maintenance report
// no progress of their own.
func heartbeatWhileRunning(ctx context.Context) (stop func()) {
	return tick.Every(beatInterval(activity.GetInfo(ctx).HeartbeatTimeout), func() { activity.RecordHeartbeat(ctx) })
}

// beatInterval is three beats per heartbeat timeout, at most one a
// second; every 10 s when the activity has no heartbeat timeout.
func beatInterval(heartbeatTimeout time.Duration) time.Duration {
	if heartbeatTimeout <= 0 {
		return 10 * time.Second
	}
	return max(heartbeatTimeout/3, time.Second)
}
