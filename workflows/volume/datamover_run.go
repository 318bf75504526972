package volume

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// dataMoverAttempts bounds how many data movers one volume's data move
// may take: a data mover that dies is replaced, one that keeps dying is
// not.
const dataMoverAttempts = 5

// dataMove is what a backup's upload and a restore's download of one
// volume share: a slot on the node, attempts on fresh data movers within
// the timeouts, and the cleanup that always runs.
type dataMove struct {
	operationID    string
	prepareTimeout time.Duration
	dataTimeout    time.Duration
	heartbeat      time.Duration
	// what names the data in messages: "the data of snapshot X".
	what   string
	logger log.Logger
	report func(ctx workflow.Context, phase v1alpha1.OperationPhase, progress string)
}

// moverTask is the activity a data mover runs for one attempt; result
// receives its answer.
type moverTask struct {
	// activity is a method value of the data mover's activities.
	activity any
	input    any
	result   any
}

// run holds a slot, exposes the volume to a data mover per attempt and
// runs task on it, replacing the data mover while attempts and time
// last. done runs after a successful attempt, before the cleanup (a
// restore hands its volume over there). Cleanup and the slot's release
// run on a disconnected context, so a canceled operation cleans up too.
func (m *dataMove) run(ctx workflow.Context, in v1alpha1.ExposeInput, task moverTask,
	done func(ctx workflow.Context) error) (exposed *v1alpha1.ExposeResult, attempts int, err error) {
	// The timeout covers the wait for a slot too: it is the user's bound
	// on the whole move.
	deadline := workflow.Now(ctx).Add(m.dataTimeout)
	release, err := m.acquireSlot(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	defer m.cleanupExposure(ctx, in)

	for attempt := 1; ; attempt++ {
		in.Attempt = attempt
		exposed, err := m.attempt(ctx, in, task, deadline)
		if err == nil {
			if done != nil {
				if err := done(ctx); err != nil {
					return nil, attempt, err
				}
			}
			return exposed, attempt, nil
		}
		if !retryUpload(ctx, err) || !workflow.Now(ctx).Before(deadline) {
			return nil, attempt, err
		}
		if attempt == dataMoverAttempts {
			msg := fmt.Sprintf("moving the data failed %d times, last: %s", attempt, flow.Reason(err))
			return nil, attempt, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeDataMoverFailed, nil)
		}
		m.logger.Warn("Data mover attempt failed; starting another", "attempt", attempt, "error", err)
		m.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("data mover attempt %d failed (%s); starting another", attempt, flow.Reason(err)))
		if err := workflow.Sleep(ctx, min(time.Duration(1<<attempt)*time.Second, time.Minute)); err != nil {
			return nil, attempt, err
		}
	}
}

// acquireSlot waits, in line, for one of the node's data mover slots,
// reporting its place; release gives it back (or leaves the line), on a
// disconnected context.
func (m *dataMove) acquireSlot(ctx workflow.Context, in v1alpha1.ExposeInput) (release func(), err error) {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(5*time.Minute, m.heartbeat))
	var place v1alpha1.Placement
	if err := workflow.ExecuteActivity(actx, exposeActs.PlaceDataMover, in).Get(ctx, &place); err != nil {
		return nil, fmt.Errorf("place the data mover: %w", err)
	}
	req := v1alpha1.SlotRequest{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Operation: m.operationID, Limit: place.Limit}
	release = func() {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		err := workflow.SignalExternalWorkflow(dctx, v1alpha1.DataMoverSlotsWorkflowID(place.Node), "", v1alpha1.SignalReleaseSlot, req).Get(dctx, nil)
		if err != nil {
			m.logger.Debug("Slot release not delivered (the slots workflow ended)", "error", err)
		}
	}
	if err := workflow.ExecuteActivity(actx, exposeActs.RequestDataMoverSlot, v1alpha1.SlotAsk{Node: place.Node, Request: req}).Get(ctx, nil); err != nil {
		return nil, fmt.Errorf("ask for a data mover slot on %s: %w", place.Node, err)
	}
	updates := workflow.GetSignalChannel(ctx, v1alpha1.SignalSlotUpdate)
	reported := 0 // the place in line last reported to the parent
	for {
		var u v1alpha1.SlotUpdate
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(updates, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &u) })
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		if ctx.Err() != nil {
			release()
			return nil, temporal.NewCanceledError("canceled while waiting for a data mover slot")
		}
		if u.Position == 0 {
			m.logger.Info("Data mover slot granted", "node", place.Node)
			return release, nil
		}
		if slotReportDue(reported, u.Position) {
			reported = u.Position
			m.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("waiting for a data mover slot on node %s (%d in line, %d at once)",
				place.Node, u.Position, place.Limit))
		}
	}
}

// attempt exposes the volume to a fresh data mover and waits for its
// task.
func (m *dataMove) attempt(ctx workflow.Context, in v1alpha1.ExposeInput, task moverTask, deadline time.Time) (*v1alpha1.ExposeResult, error) {
	m.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("exposing %s to a data mover (attempt %d)", m.exposedWhat(in), in.Attempt))
	var exposed v1alpha1.ExposeResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, m.prepareOptions()), exposeActs.ExposeVolume, in).Get(ctx, &exposed)
	if err != nil {
		var timeoutErr *temporal.TimeoutError
		if errors.As(err, &timeoutErr) {
			return nil, m.notStarted(ctx, in)
		}
		return nil, fmt.Errorf("expose %s: %w", m.exposedWhat(in), err)
	}
	m.report(ctx, v1alpha1.OperationInProgress, fmt.Sprintf("waiting for data mover %s to start", exposed.DataMover))

	remaining := deadline.Sub(workflow.Now(ctx))
	if remaining <= 0 {
		return nil, temporal.NewNonRetryableApplicationError(m.timeoutMessage(), v1alpha1.ErrTypeDataMoverTimeout, nil)
	}
	tctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.TaskQueue,
		ScheduleToStartTimeout: m.prepareTimeout,
		StartToCloseTimeout:    remaining,
		HeartbeatTimeout:       m.heartbeat,
		WaitForCancellation:    true,
		// A retry needs a new data mover: run makes one.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	err = m.runTask(ctx, tctx, in, task)
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		switch timeoutErr.TimeoutType() {
		case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
			return nil, m.notStarted(ctx, in)
		case enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
			return nil, temporal.NewNonRetryableApplicationError(m.timeoutMessage(), v1alpha1.ErrTypeDataMoverTimeout, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	return &exposed, nil
}

// prepareOptions bound a step of getting the data mover started, retries
// included, by the prepare timeout.
func (m *dataMove) prepareOptions() workflow.ActivityOptions {
	opts := flow.ActivityOptions(m.prepareTimeout, m.heartbeat)
	opts.ScheduleToCloseTimeout = m.prepareTimeout
	return opts
}

// exposedWhat names what is exposed: the backup's snapshot, or a fresh
// volume for the restore.
func (m *dataMove) exposedWhat(in v1alpha1.ExposeInput) string {
	if in.Mode == v1alpha1.ExposeRestore {
		return "a new volume for " + in.Volume.Key()
	}
	if pv := in.Volume.PodVolume; pv != nil {
		return fmt.Sprintf("volume %s of pod %s/%s on node %s", pv.Volume, in.Volume.Namespace, pv.Pod, pv.Node)
	}
	return "snapshot " + in.Snapshot
}

// notStarted asks the exposer why no data mover started in time.
func (m *dataMove) notStarted(ctx workflow.Context, in v1alpha1.ExposeInput) error {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(2*time.Minute, m.heartbeat))
	var diag v1alpha1.DiagnoseResult
	if err := workflow.ExecuteActivity(actx, exposeActs.DiagnoseExposure, in).Get(ctx, &diag); err != nil {
		diag.Reason = "the exposer could not say why: " + flow.Reason(err)
	}
	msg := fmt.Sprintf("no data mover started within dataMoverPrepareTimeout %s: %s", m.prepareTimeout, diag.Reason)
	return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeDataMoverNotStarted, nil)
}

func (m *dataMove) timeoutMessage() string {
	return fmt.Sprintf("%s was not moved within dataMoverTimeout %s", m.what, m.dataTimeout)
}

// cleanupExposure stops the data movers and deletes what exposing the
// volume created, on a disconnected context so a canceled operation
// cleans up too.
func (m *dataMove) cleanupExposure(ctx workflow.Context, in v1alpha1.ExposeInput) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, flow.ActivityOptions(10*time.Minute, m.heartbeat))
	if err := workflow.ExecuteActivity(actx, exposeActs.CleanupExposure, in).Get(dctx, nil); err != nil {
		m.logger.Warn("Cleaning up after the data mover failed", "error", err)
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

// slotReportDue says whether a place in line is worth reporting, after
// the place last reported (0: none yet). Every report is an event in the
// parent's history: the first place is reported, then only each time
// the place halves, so a volume waiting behind n others adds about
// log2(n) events, not n.
func slotReportDue(reported, position int) bool {
	return reported == 0 || position <= reported/2
}
