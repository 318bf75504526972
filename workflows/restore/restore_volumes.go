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
	// podCancel cancels the pod volumes' children; listening: the
	// progress of both kinds is listened for.
	podCancel workflow.CancelFunc
	listening bool
}

// volumesRunning says whether a claim's volume has not ended yet
// (waiting to start, or running).
func (r *restoreRun) volumesRunning() bool { return anyRunning(r.status.Volumes) }

// podVolumesRunning says the same of the pod volumes.
func (r *restoreRun) podVolumesRunning() bool { return anyRunning(r.status.PodVolumes) }

func anyRunning(vols []v1alpha1.VolumeRestoreStatus) bool {
	for _, vs := range vols {
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
	r.volumes.cancel = r.startChildren(ctx, &r.status.Volumes, vols, v1alpha1.VolumeRestoreWorkflowName)
}

// startPodVolumes starts one child workflow per restored pod volume
// that gets its file-system copy back, once the pods are applied: each
// waits for its pod on its node.
func (r *restoreRun) startPodVolumes(ctx workflow.Context, vols []v1alpha1.RestoreVolume) {
	if len(vols) == 0 || r.volumes.podCancel != nil {
		return
	}
	r.volumes.podCancel = r.startChildren(ctx, &r.status.PodVolumes, vols, v1alpha1.PodVolumeRestoreWorkflowName)
}

// startChildren adds vols to list and runs a child workflow of type
// workflowType per volume, at most VolumeConcurrency at once, in a
// coroutine; it returns what cancels them.
func (r *restoreRun) startChildren(ctx workflow.Context, list *[]v1alpha1.VolumeRestoreStatus, vols []v1alpha1.RestoreVolume,
	workflowType string) workflow.CancelFunc {
	now := workflow.Now(ctx).UTC()
	for _, v := range vols {
		id := v1alpha1.VolumeRestoreWorkflowID(r.spec.Name, v.Namespace, v.Claim)
		if pv := v.PodVolume; pv != nil {
			id = v1alpha1.PodVolumeRestoreWorkflowID(r.spec.Name, v.Namespace, pv.Pod, pv.Volume)
		}
		*list = append(*list, v1alpha1.VolumeRestoreStatus{RestoreVolume: v, Phase: v1alpha1.OperationNew, WorkflowID: id, Updated: &now})
	}
	r.listenForVolumeProgress(ctx)
	vctx, cancel := workflow.WithCancel(ctx)
	workflow.Go(vctx, func(gctx workflow.Context) {
		sel := workflow.NewSelector(gctx)
		inFlight := 0
		for i := range *list {
			for inFlight >= r.opts.VolumeConcurrency {
				sel.Select(gctx)
				inFlight--
			}
			vs := &(*list)[i]
			if gctx.Err() != nil {
				vs.Phase, vs.Error = v1alpha1.OperationCanceled, "canceled before it started"
				continue
			}
			f := r.startVolume(gctx, vs, workflowType)
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
	return cancel
}

// volumeRequest is what a volume's child workflow is started with.
func (r *restoreRun) volumeRequest(vs *v1alpha1.VolumeRestoreStatus) v1alpha1.VolumeRestoreRequest {
	return v1alpha1.VolumeRestoreRequest{
		Restore: r.spec.Name, Backup: r.spec.BackupName, Location: r.spec.StorageLocation, Volume: vs.RestoreVolume,
		PrepareTimeout: r.spec.PrepareTimeout(), DataTimeout: r.spec.DataTimeout(), HeartbeatTimeout: r.opts.HeartbeatTimeout.Duration,
	}
}

func (r *restoreRun) startVolume(ctx workflow.Context, vs *v1alpha1.VolumeRestoreStatus, workflowType string) workflow.Future {
	req := r.volumeRequest(vs)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          vs.WorkflowID,
		WaitForCancellation: true,
		// A restore that is terminated still asks its volumes to clean up.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
	})
	now := workflow.Now(ctx).UTC()
	vs.Phase, vs.Started, vs.Updated = v1alpha1.OperationInProgress, &now, &now
	r.updateDetails(ctx)
	return workflow.ExecuteChildWorkflow(cctx, workflowType, req)
}

func (r *restoreRun) recordVolume(ctx workflow.Context, vs *v1alpha1.VolumeRestoreStatus, res v1alpha1.VolumeRestoreResult, err error) {
	now := workflow.Now(ctx).UTC()
	vs.Updated = &now
	vs.Phase, vs.Error = flow.ChildOutcome(ctx, err, res.Phase, res.Error)
	if err == nil {
		vs.PersistentVolume, vs.Download = res.PersistentVolume, res.Download
	}
	vs.Progress = ""
	switch {
	case vs.Phase == v1alpha1.OperationCompleted && vs.PodVolume != nil:
		vs.Progress = "data restored; the pod starts once all its volumes are"
	case vs.Phase == v1alpha1.OperationCompleted:
		vs.Progress = "data restored; waiting for the claim"
	default:
		r.logger.Warn("Volume not restored", "volume", vs.Key(), "phase", vs.Phase, "reason", vs.Error)
	}
	r.updateDetails(ctx)
}

// listenForVolumeProgress applies the children's (and their data
// movers') progress signals to the volumes' status, once for both kinds.
func (r *restoreRun) listenForVolumeProgress(ctx workflow.Context) {
	if r.volumes.listening {
		return
	}
	r.volumes.listening = true
	flow.OnProgress(ctx, func(gctx workflow.Context, p v1alpha1.OperationProgress) {
		for _, list := range [][]v1alpha1.VolumeRestoreStatus{r.status.Volumes, r.status.PodVolumes} {
			for i := range list {
				vs := &list[i]
				if vs.ID == p.ID && !vs.Phase.Done() {
					now := workflow.Now(gctx).UTC()
					vs.Progress, vs.Updated = p.Progress, &now
				}
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
	all := append(append([]v1alpha1.VolumeRestoreStatus(nil), r.status.Volumes...), r.status.PodVolumes...)
	for _, vs := range all {
		if vs.Phase == v1alpha1.OperationFailed {
			failed = append(failed, vs.Key()+": "+vs.Error)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d volumes not restored: %s", len(failed), len(all), strings.Join(failed, "; "))
}

// awaitPodVolumes waits until every pod volume's copy is written back
// (or has failed), before the restore hooks exec in the pods.
func (r *restoreRun) awaitPodVolumes(ctx workflow.Context) error {
	if !r.podVolumesRunning() {
		return nil
	}
	r.status.Current = "pod volume data"
	r.updateDetails(ctx)
	if err := workflow.Await(ctx, func() bool { return !r.podVolumesRunning() }); err != nil {
		return temporal.NewCanceledError()
	}
	r.status.Current = ""
	return nil
}

// finishPodVolumes cancels the pod volumes still running, when the
// restore ends early, and waits until each has told its pod; the pods
// of those that never started are told too.
func (r *restoreRun) finishPodVolumes(ctx workflow.Context) {
	if r.podVolumesRunning() {
		r.volumes.podCancel()
		_ = workflow.Await(ctx, func() bool { return !r.podVolumesRunning() })
	}
	r.releaseUnstarted(ctx)
	r.updateDetails(ctx)
}

// releaseUnstarted runs, for each pod volume the restore ended before it
// started, a child that only tells the pod (if it was made and waits)
// why its data will not come. They run all at once: the restore is
// over, and each mostly waits for its pod.
func (r *restoreRun) releaseUnstarted(ctx workflow.Context) {
	var releases []workflow.Future
	for i := range r.status.PodVolumes {
		vs := &r.status.PodVolumes[i]
		if vs.Started != nil {
			continue
		}
		req := r.volumeRequest(vs)
		req.Release = vs.Error
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: vs.WorkflowID,
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON})
		releases = append(releases, workflow.ExecuteChildWorkflow(cctx, v1alpha1.PodVolumeRestoreWorkflowName, req))
	}
	for _, f := range releases {
		_ = f.Get(ctx, nil)
	}
}

// volumeCounts is "1 New, 1 Completed" for the UI's summary.
func volumeCounts(vols []v1alpha1.VolumeRestoreStatus) string {
	return flow.PhaseCounts(len(vols), func(i int) v1alpha1.OperationPhase { return vols[i].Phase })
}
