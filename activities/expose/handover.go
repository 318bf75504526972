package expose

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// HandOverVolume stops the restore's data movers of the volume and gives
// the volume they wrote to the target claim, which the restore creates
// next.
func (a *Activities) HandOverVolume(ctx context.Context, in v1alpha1.ExposeInput) (*v1alpha1.HandOverResult, error) {
	run, err := a.start(ctx, in)
	if err != nil {
		return nil, err
	}
	defer run.End()
	ref := exposer.ClaimRef{Namespace: in.Volume.Namespace, Name: in.Volume.Claim,
		Labels: map[string]string{v1alpha1.LabelRestore: in.Owner}}
	pv, err := a.Exposer.HandOver(ctx, a.target(in), ref, heartbeat(ctx))
	if err != nil {
		return nil, fmt.Errorf("hand the restored volume over to claim %s: %w", in.Volume.Key(), err)
	}
	run.Log.Info("Restored volume handed over", zap.String("volume", in.Volume.Key()), zap.String("persistentVolume", pv))
	return &v1alpha1.HandOverResult{PersistentVolume: pv}, nil
}

// FinishVolumeRestores waits for the restored claims to bind to the
// volumes handed to them and gives each bound volume its reclaim policy
// back. A volume whose claim was not created by the timeout, or bound
// another volume, is deleted: nothing would ever use it, and its data is
// still in the repository.
func (a *Activities) FinishVolumeRestores(ctx context.Context, in v1alpha1.FinishVolumeRestoresInput) (*v1alpha1.FinishVolumeRestoresResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	deadline := time.Now().Add(in.Timeout)
	pending := map[string]v1alpha1.ClaimBinding{}
	for _, b := range in.Bindings {
		pending[b.Namespace+"/"+b.Claim] = b
	}
	res := &v1alpha1.FinishVolumeRestoresResult{Unbound: map[string]string{}}
	last := map[string]exposer.HandOverState{}
	for {
		for key, b := range pending {
			st, err := a.Exposer.FinishHandOver(ctx, b.Namespace, b.Claim, b.PersistentVolume)
			if err != nil {
				return nil, err
			}
			last[key] = st
			if !st.Done {
				continue
			}
			delete(pending, key)
			if st.Why == "" {
				run.Log.Info("Restored claim bound", zap.String("claim", key), zap.String("persistentVolume", b.PersistentVolume))
				continue
			}
			res.Unbound[key] = st.Why
			if st.Orphaned {
				if err := a.abandon(ctx, run, b, st.Why); err != nil {
					return nil, err
				}
			}
		}
		activity.RecordHeartbeat(ctx, len(pending))
		if len(pending) == 0 || !time.Now().Before(deadline) {
			break
		}
		if err := clock.Sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	for key, b := range pending {
		st := last[key]
		res.Unbound[key] = st.Why
		if !st.ClaimMissing {
			continue // the claim exists and may still bind
		}
		if err := a.abandon(ctx, run, b, st.Why); err != nil {
			return nil, err
		}
		res.Unbound[key] += "; its restored volume " + b.PersistentVolume + " was deleted"
	}
	return res, nil
}

func (a *Activities) abandon(ctx context.Context, run *runlog.Run, b v1alpha1.ClaimBinding, why string) error {
	run.Log.Warn("Deleting a restored volume nothing will bind", zap.String("persistentVolume", b.PersistentVolume),
		zap.String("reason", why))
	return a.Exposer.DeleteVolume(ctx, b.PersistentVolume)
}
