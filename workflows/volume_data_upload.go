package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// dataMoverAttempts bounds how many data movers one volume's upload may
// take: a data mover that dies is replaced, one that keeps dying is not.
const dataMoverAttempts = 5

// moveData moves the ready snapshot's data into the location's kopia
// repository: expose it, let a data mover on the operation's own task
// queue upload it, replace the data mover while attempts and time last,
// and always clean up, even when canceled.
func (v *volumeRun) moveData(ctx workflow.Context, info *SnapshotInfo) (*DataUploadInfo, error) {
	in := ExposeInput{
		Owner: v.req.Backup, Location: v.req.Location, Mode: ExposeBackup, Volume: v.req.Volume,
		Snapshot: info.Name, SnapshotSize: info.RestoreBytes, TaskQueue: DataMoverTaskQueue(v.req.Backup, v.req.Volume),
	}
	// The timeout covers the wait for a slot too: it is the user's bound
	// on the whole move.
	deadline := workflow.Now(ctx).Add(v.req.DataTimeout)
	release, err := v.acquireSlot(ctx, in)
	if err != nil {
		return nil, err
	}
	defer release()
	defer v.cleanupExposure(ctx, in)

	for attempt := 1; ; attempt++ {
		in.Attempt = attempt
		up, err := v.uploadAttempt(ctx, in, deadline)
		if err == nil {
			up.Attempts = attempt
			return up, nil
		}
		if !retryUpload(ctx, err) || !workflow.Now(ctx).Before(deadline) {
			return nil, err
		}
		if attempt == dataMoverAttempts {
			msg := fmt.Sprintf("moving the data failed %d times, last: %s", attempt, reason(err))
			return nil, temporal.NewNonRetryableApplicationError(msg, ErrTypeDataMoverFailed, nil)
		}
		v.logger.Warn("Data mover attempt failed; starting another", "attempt", attempt, "error", err)
		v.report(ctx, OperationInProgress, fmt.Sprintf("data mover attempt %d failed (%s); starting another", attempt, reason(err)))
		if err := workflow.Sleep(ctx, min(time.Duration(1<<attempt)*time.Second, time.Minute)); err != nil {
			return nil, err
		}
	}
}

// acquireSlot waits, in line, for one of the node's data mover slots,
// reporting its place; release gives it back (or leaves the line), on a
// disconnected context.
func (v *volumeRun) acquireSlot(ctx workflow.Context, in ExposeInput) (release func(), err error) {
	actx := workflow.WithActivityOptions(ctx, activityOptions(5*time.Minute, v.heartbeat()))
	var place Placement
	if err := workflow.ExecuteActivity(actx, PlaceDataMoverActivity, in).Get(ctx, &place); err != nil {
		return nil, fmt.Errorf("place the data mover: %w", err)
	}
	req := SlotRequest{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Operation: v.req.OperationID, Limit: place.Limit}
	release = func() {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		err := workflow.SignalExternalWorkflow(dctx, DataMoverSlotsWorkflowID(place.Node), "", SignalReleaseSlot, req).Get(dctx, nil)
		if err != nil {
			v.logger.Debug("Slot release not delivered (the slots workflow ended)", "error", err)
		}
	}
	if err := workflow.ExecuteActivity(actx, RequestDataMoverSlotActivity, SlotAsk{Node: place.Node, Request: req}).Get(ctx, nil); err != nil {
		return nil, fmt.Errorf("ask for a data mover slot on %s: %w", place.Node, err)
	}
	updates := workflow.GetSignalChannel(ctx, SignalSlotUpdate)
	for {
		var u SlotUpdate
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(updates, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &u) })
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if ctx.Err() != nil {
			release()
			return nil, temporal.NewCanceledError("canceled while waiting for a data mover slot")
		}
		if u.Position == 0 {
			v.logger.Info("Data mover slot granted", "node", place.Node)
			return release, nil
		}
		v.report(ctx, OperationInProgress, fmt.Sprintf("waiting for a data mover slot on node %s (%d in line, %d at once)",
			place.Node, u.Position, place.Limit))
	}
}

// uploadAttempt exposes the volume to a fresh data mover and waits for
// its upload.
func (v *volumeRun) uploadAttempt(ctx workflow.Context, in ExposeInput, deadline time.Time) (*DataUploadInfo, error) {
	hb := v.heartbeat()
	v.report(ctx, OperationInProgress, fmt.Sprintf("exposing snapshot %s to a data mover (attempt %d)", in.Snapshot, in.Attempt))
	eopts := activityOptions(v.req.PrepareTimeout, hb)
	eopts.ScheduleToCloseTimeout = v.req.PrepareTimeout
	var exposed ExposeResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, eopts), ExposeVolumeActivity, in).Get(ctx, &exposed)
	if err != nil {
		var timeoutErr *temporal.TimeoutError
		if errors.As(err, &timeoutErr) {
			return nil, v.notStarted(ctx, in)
		}
		return nil, fmt.Errorf("expose snapshot %s: %w", in.Snapshot, err)
	}
	v.report(ctx, OperationInProgress, fmt.Sprintf("waiting for data mover %s to start", exposed.DataMover))

	remaining := deadline.Sub(workflow.Now(ctx))
	if remaining <= 0 {
		return nil, temporal.NewNonRetryableApplicationError(v.dataTimeoutMessage(), ErrTypeDataMoverTimeout, nil)
	}
	uctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.TaskQueue,
		ScheduleToStartTimeout: v.req.PrepareTimeout,
		StartToCloseTimeout:    remaining,
		HeartbeatTimeout:       hb,
		WaitForCancellation:    true,
		// A retry needs a new data mover: this workflow makes one.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var up DataUploadInfo
	err = workflow.ExecuteActivity(uctx, UploadVolumeActivity, UploadVolumeInput{
		Backup: v.req.Backup, Location: v.req.Location, Volume: v.req.Volume,
		OperationID: v.req.OperationID, BackupWorkflowID: v.parentID(ctx),
	}).Get(ctx, &up)
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		switch timeoutErr.TimeoutType() {
		case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
			return nil, v.notStarted(ctx, in)
		case enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
			return nil, temporal.NewNonRetryableApplicationError(v.dataTimeoutMessage(), ErrTypeDataMoverTimeout, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	up.DataMover, up.Node = exposed.DataMover, exposed.Node
	return &up, nil
}

// notStarted asks the exposer why no data mover started in time.
func (v *volumeRun) notStarted(ctx workflow.Context, in ExposeInput) error {
	actx := workflow.WithActivityOptions(ctx, activityOptions(2*time.Minute, v.heartbeat()))
	var diag DiagnoseResult
	if err := workflow.ExecuteActivity(actx, DiagnoseExposeActivity, in).Get(ctx, &diag); err != nil {
		diag.Reason = "the exposer could not say why: " + reason(err)
	}
	msg := fmt.Sprintf("no data mover started within dataMoverPrepareTimeout %s: %s", v.req.PrepareTimeout, diag.Reason)
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeDataMoverNotStarted, nil)
}

func (v *volumeRun) dataTimeoutMessage() string {
	return fmt.Sprintf("the data of snapshot %s was not moved within dataMoverTimeout %s", v.name, v.req.DataTimeout)
}

// cleanupExposure stops the data movers and deletes the claim and
// snapshot clone, on a disconnected context so a canceled backup cleans
// up too.
func (v *volumeRun) cleanupExposure(ctx workflow.Context, in ExposeInput) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, activityOptions(10*time.Minute, defaultHeartbeatTimeout))
	if err := workflow.ExecuteActivity(actx, CleanupExposeActivity, in).Get(dctx, nil); err != nil {
		v.logger.Warn("Cleaning up after the data mover failed", "error", err)
	}
}

// retryUpload says whether another data mover may succeed where this one
// failed: not when canceled, timed out or refused for good.
func retryUpload(ctx workflow.Context, err error) bool {
	if ctx.Err() != nil || temporal.IsCanceledError(err) {
		return false
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		return false
	}
	return true
}

func (v *volumeRun) heartbeat() time.Duration {
	if v.req.HeartbeatTimeout > 0 {
		return v.req.HeartbeatTimeout
	}
	return defaultHeartbeatTimeout
}

// parentID is the backup's workflow ID, which the data mover reports its
// progress to.
func (v *volumeRun) parentID(ctx workflow.Context) string {
	if p := workflow.GetInfo(ctx).ParentWorkflowExecution; p != nil {
		return p.ID
	}
	return ""
}
