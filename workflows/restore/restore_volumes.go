package restore

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// claimBindTimeout bounds the wait for restored claims to bind to the
// volumes handed to them; a pre-bound volume binds within seconds.
const claimBindTimeout = 5 * time.Minute

// restoreVolumes is the restore's side of its volumes' child workflows.
type restoreVolumes struct {
	cancel workflow.CancelFunc
	// claimsApplied: the claims were created, and their volumes are
	// worth waiting for.
	claimsApplied bool
}

// volumesRunning says whether a volume has not ended yet (waiting to
// start, or running).
func (r *restoreRun) volumesRunning() bool {
	for _, vs := range r.status.Volumes {
		if !vs.Phase.Done() {
			return true
		}
	}
	return false
}

// startVolumes starts one child workflow per volume whose data comes
// from the repository, at most VolumeConcurrency at once, in a coroutine
// of their own: the restore applies the resource types before claims
// meanwhile. Nothing runs when the plan has no such volume.
func (r *restoreRun) startVolumes(ctx workflow.Context, vols []v1alpha1.RestoreVolume) {
	if len(vols) == 0 {
		return
	}
	now := workflow.Now(ctx).UTC()
	for _, v := range vols {
		r.status.Volumes = append(r.status.Volumes, v1alpha1.VolumeRestoreStatus{RestoreVolume: v, Phase: v1alpha1.OperationNew,
			WorkflowID: v1alpha1.VolumeRestoreWorkflowID(r.spec.Name, v.Namespace, v.Claim), Updated: &now})
	}
	r.listenForVolumeProgress(ctx)
	vctx, cancel := workflow.WithCancel(ctx)
	r.volumes.cancel = cancel
	workflow.Go(vctx, func(gctx workflow.Context) {
		sel := workflow.NewSelector(gctx)
		inFlight := 0
		for i := range r.status.Volumes {
			for inFlight >= r.opts.VolumeConcurrency {
				sel.Select(gctx)
				inFlight--
			}
			vs := &r.status.Volumes[i]
			if gctx.Err() != nil {
				vs.Phase, vs.Error = v1alpha1.OperationCanceled, "canceled before it started"
				continue
			}
			f := r.startVolume(gctx, vs)
			inFlight++
			sel.AddFuture(f, func(f workflow.Future) {
				var res v1alpha1.VolumeRestoreResult
				r.recordVolume(gctx, vs, res, f.Get(gctx, &res))
			})
		}
		for inFlight > 0 {
			sel.Select(gctx)
			inFlight--
		}
	})
}

func (r *restoreRun) startVolume(ctx workflow.Context, vs *v1alpha1.VolumeRestoreStatus) workflow.Future {
	req := v1alpha1.VolumeRestoreRequest{
		Restore: r.spec.Name, Backup: r.spec.BackupName, Location: r.spec.StorageLocation, Volume: vs.RestoreVolume,
		PrepareTimeout: r.spec.PrepareTimeout(), DataTimeout: r.spec.DataTimeout(), HeartbeatTimeout: r.opts.HeartbeatTimeout.Duration,
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          vs.WorkflowID,
		WaitForCancellation: true,
		// A restore that is terminated still asks its volumes to clean up.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
	})
	now := workflow.Now(ctx).UTC()
	vs.Phase, vs.Started, vs.Updated = v1alpha1.OperationInProgress, &now, &now
	r.updateDetails(ctx)
	return workflow.ExecuteChildWorkflow(cctx, v1alpha1.VolumeRestoreWorkflowName, req)
}

func (r *restoreRun) recordVolume(ctx workflow.Context, vs *v1alpha1.VolumeRestoreStatus, res v1alpha1.VolumeRestoreResult, err error) {
	now := workflow.Now(ctx).UTC()
	vs.Updated = &now
	vs.Phase, vs.Error = flow.ChildOutcome(ctx, err, res.Phase, res.Error)
	if err == nil {
		vs.PersistentVolume, vs.Download = res.PersistentVolume, res.Download
	}
	vs.Progress = ""
	if vs.Phase == v1alpha1.OperationCompleted {
		vs.Progress = "data restored; waiting for the claim"
	} else {
		r.logger.Warn("Volume not restored", "volume", vs.Key(), "phase", vs.Phase, "reason", vs.Error)
	}
	r.updateDetails(ctx)
}

// listenForVolumeProgress applies the children's (and their data
// movers') progress signals to the volumes' status.
func (r *restoreRun) listenForVolumeProgress(ctx workflow.Context) {
	flow.OnProgress(ctx, func(gctx workflow.Context, p v1alpha1.OperationProgress) {
		for i := range r.status.Volumes {
			vs := &r.status.Volumes[i]
			if vs.ID == p.ID && !vs.Phase.Done() {
				now := workflow.Now(gctx).UTC()
				vs.Progress, vs.Updated = p.Progress, &now
			}
		}
		r.updateDetails(gctx)
	})
}

// awaitVolumes waits until every volume's data is restored (or has
// failed), before the claims are applied.
func (r *restoreRun) awaitVolumes(ctx workflow.Context) error {
	if !r.volumesRunning() {
		return nil
	}
	r.status.Current = "volume data"
	r.updateDetails(ctx)
	if err := workflow.Await(ctx, func() bool { return !r.volumesRunning() }); err != nil {
		return temporal.NewCanceledError()
	}
	r.status.Current = ""
	return nil
}

// claimVolumes tells the claims' apply which volume each claim binds to,
// or why its data could not be restored.
func (r *restoreRun) claimVolumes() map[string]v1alpha1.ClaimVolume {
	if len(r.status.Volumes) == 0 {
		return nil
	}
	m := map[string]v1alpha1.ClaimVolume{}
	for _, vs := range r.status.Volumes {
		if vs.Phase == v1alpha1.OperationCompleted && vs.PersistentVolume != "" {
			m[vs.Key()] = v1alpha1.ClaimVolume{PersistentVolume: vs.PersistentVolume}
			continue
		}
		m[vs.Key()] = v1alpha1.ClaimVolume{Error: fmt.Sprintf("its data was not restored (%s): %s", vs.Phase, vs.Error)}
	}
	return m
}

// finishVolumes waits (once the claims are applied, up to
// claimBindTimeout) for the restored claims to bind to their volumes; the
// worker gives each bound volume its reclaim policy back and deletes a
// handed-over volume whose claim never came. A restore that ends early
// cancels the volumes still running first.
func (r *restoreRun) finishVolumes(ctx workflow.Context) {
	if len(r.status.Volumes) == 0 {
		return
	}
	var timeout time.Duration
	if r.volumes.claimsApplied {
		timeout = claimBindTimeout
	}
	if r.volumesRunning() {
		r.volumes.cancel()
		_ = workflow.Await(ctx, func() bool { return !r.volumesRunning() })
	}
	in := v1alpha1.FinishVolumeRestoresInput{Restore: r.spec.Name, Location: r.spec.StorageLocation, Timeout: timeout}
	for _, vs := range r.status.Volumes {
		if vs.PersistentVolume != "" {
			in.Bindings = append(in.Bindings, v1alpha1.ClaimBinding{Namespace: vs.Namespace, Claim: vs.Claim, PersistentVolume: vs.PersistentVolume})
		}
	}
	if len(in.Bindings) == 0 {
		return
	}
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(timeout+10*time.Minute))
	var res v1alpha1.FinishVolumeRestoresResult
	if err := workflow.ExecuteActivity(actx, exposeActs.FinishVolumeRestores, in).Get(ctx, &res); err != nil {
		r.logger.Warn("Finishing the volume restores failed", "error", err)
		res.Unbound = map[string]string{}
		for _, b := range in.Bindings {
			res.Unbound[b.Namespace+"/"+b.Claim] = "finishing failed: " + flow.Reason(err)
		}
	}
	for i := range r.status.Volumes {
		vs := &r.status.Volumes[i]
		if vs.PersistentVolume == "" {
			continue
		}
		if why, unbound := res.Unbound[vs.Key()]; unbound {
			vs.Phase, vs.Error, vs.Progress = v1alpha1.OperationFailed, why, ""
			r.logger.Warn("Restored volume not bound to its claim", "volume", vs.Key(), "reason", why)
			continue
		}
		vs.Bound, vs.Progress = true, "bound"
	}
	r.updateDetails(ctx)
}

// volumesFailure summarizes the volumes not restored, for a
// PartiallyFailed restore's reason.
func (r *restoreRun) volumesFailure() string {
	var failed []string
	for _, vs := range r.status.Volumes {
		if vs.Phase == v1alpha1.OperationFailed {
			failed = append(failed, vs.Key()+": "+vs.Error)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d volumes not restored: %s", len(failed), len(r.status.Volumes), strings.Join(failed, "; "))
}

// volumeCounts is "1 New, 1 Completed" for the UI's summary.
func volumeCounts(vols []v1alpha1.VolumeRestoreStatus) string {
	return flow.PhaseCounts(len(vols), func(i int) v1alpha1.OperationPhase { return vols[i].Phase })
}
