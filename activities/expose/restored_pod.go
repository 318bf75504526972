package expose

import (
	"context"
	"errors"
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

// markerDir is the restore-wait init container's emptyDir below the
// restored pod's directory.
const markerDir = "volumes/kubernetes.io~empty-dir/" + v1alpha1.RestoreWaitVolume

// AwaitRestoredPod waits until the restored pod runs its restore-wait
// init container on a node, and returns the volume's place there. A pod
// that never gets there within the timeout, or one that does not wait
// (it existed, or another made it), fails for good: the volume's copy
// cannot be written back.
func (a *Activities) AwaitRestoredPod(ctx context.Context, in v1alpha1.AwaitRestoredPodInput) (*v1alpha1.PodVolume, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	deadline := time.Now().Add(in.Timeout)
	for {
		pv, waiting, err := a.Exposer.RestoredPod(ctx, in.Restore, in.Namespace, in.Pod, in.Volume)
		if in.Ended && errors.Is(err, exposer.ErrPodMissing) {
			err = fmt.Errorf("the restore ended before it made the pod: %w", exposer.ErrPodGone)
		}
		switch {
		case errors.Is(err, exposer.ErrPodGone):
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypePodGone, nil)
		case errors.Is(err, exposer.ErrPodMissing):
			waiting = err.Error()
		case err != nil:
			return nil, fmt.Errorf("restored pod %s/%s: %w", in.Namespace, in.Pod, err)
		case pv != nil:
			run.Log.Info("Restored pod waits for its volume", zap.String("pod", in.Namespace+"/"+in.Pod), zap.String("volume", in.Volume),
				zap.String("node", pv.Node), zap.String("uid", pv.UID))
			return pv, nil
		}
		activity.RecordHeartbeat(ctx, waiting)
		if !time.Now().Before(deadline) {
			msg := fmt.Sprintf("%s after %s (dataMoverPrepareTimeout)", waiting, in.Timeout)
			return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypePodGone, nil)
		}
		if err := clock.Sleep(ctx, 2*time.Second); err != nil {
			return nil, err
		}
	}
}
