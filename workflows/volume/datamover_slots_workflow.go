package volume

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

const (
	// slotsIdleExit ends a node's slots workflow that has been empty this
	// long; the next request starts it again.
	slotsIdleExit = 5 * time.Minute
)

// DataMoverSlotsWorkflow grants a node's data mover slots in order.
func DataMoverSlotsWorkflow(ctx workflow.Context, st v1alpha1.SlotsState) error {
	s := &slots{SlotsState: st, told: map[string]int{}, logger: log.With(workflow.GetLogger(ctx), "node", st.Node)}
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QuerySlots, func() (*v1alpha1.SlotsState, error) { return &s.SlotsState, nil }); err != nil {
		return fmt.Errorf("register slots query: %w", err)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindDataMoverSlots), v1alpha1.SearchAttrName.ValueSet(st.Node)); err != nil {
		return fmt.Errorf("set search attributes: %w", err)
	}
	acquire := workflow.GetSignalChannel(ctx, v1alpha1.SignalAcquireSlot)
	release := workflow.GetSignalChannel(ctx, v1alpha1.SignalReleaseSlot)
	for {
		s.grant(ctx)
		idle := len(s.Holders) == 0 && len(s.Queue) == 0
		// Continue as new when Temporal suggests it, so the history stays
		// bounded however long the node is busy; the state carries the
		// holders and the queue in order.
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || idle {
			// Take what arrived meanwhile before ending this run.
			if s.drain(acquire, release) {
				continue
			}
			if !idle {
				return workflow.NewContinueAsNewError(ctx, v1alpha1.DataMoverSlotsWorkflowName, s.SlotsState)
			}
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var r v1alpha1.SlotRequest
			c.Receive(ctx, &r)
			s.add(r)
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var r v1alpha1.SlotRequest
			c.Receive(ctx, &r)
			s.remove(r.WorkflowID)
		})
		timedOut, checkDue := false, false
		tctx, cancelTimer := workflow.WithCancel(ctx)
		if idle {
			sel.AddFuture(workflow.NewTimer(tctx, slotsIdleExit), func(workflow.Future) { timedOut = true })
		}
		if s.blocked() {
			// A holder terminated (not canceled) never gives its slot back.
			sel.AddFuture(workflow.NewTimer(tctx, s.holderCheck()), func(workflow.Future) { checkDue = true })
		}
		sel.Select(ctx)
		cancelTimer()
		if timedOut && !s.drain(acquire, release) {
			return nil
		}
		if checkDue {
			s.dropClosedHolders(ctx)
		}
	}
}

type slots struct {
	v1alpha1.SlotsState
	// told is the place each operation was last told, so an unchanged
	// place is not signalled again.
	told   map[string]int
	logger log.Logger
}

// holderCheck is how often a blocked node checks its holders.
func (s *slots) holderCheck() time.Duration {
	if s.HolderCheck > 0 {
		return s.HolderCheck
	}
	return v1alpha1.DefaultSlotHolderCheck
}

// blocked says the node's slots are all held and operations wait.
func (s *slots) blocked() bool {
	return len(s.Queue) > 0 && len(s.Holders) >= max(s.Limit, 1)
}

// dropClosedHolders frees the slots of holders whose workflow has closed
// without giving theirs back.
func (s *slots) dropClosedHolders(ctx workflow.Context) {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(time.Minute, workflows.HeartbeatTimeout(ctx)))
	var closed []string
	if err := workflow.ExecuteActivity(actx, exposeActs.ClosedSlotHolders, s.Holders).Get(ctx, &closed); err != nil {
		s.logger.Warn("Checking the slot holders failed; next time", "error", err)
		return
	}
	for _, id := range closed {
		s.logger.Warn("Slot holder closed without giving its slot back; freeing it", "workflowId", id)
		s.remove(id)
	}
}

// drain applies signals that are waiting, and says whether there were any.
func (s *slots) drain(acquire, release workflow.ReceiveChannel) bool {
	got := false
	for {
		var r v1alpha1.SlotRequest
		switch {
		case acquire.ReceiveAsync(&r):
			s.add(r)
		case release.ReceiveAsync(&r):
			s.remove(r.WorkflowID)
		default:
			return got
		}
		got = true
	}
}

// add queues a request; one already holding or waiting stays where it is
// (a retried request is not a second one).
func (s *slots) add(r v1alpha1.SlotRequest) {
	if r.Limit > 0 {
		s.Limit = r.Limit
	}
	for _, h := range append(append([]v1alpha1.SlotRequest{}, s.Holders...), s.Queue...) {
		if h.WorkflowID == r.WorkflowID {
			return
		}
	}
	s.Queue = append(s.Queue, r)
}

func (s *slots) remove(workflowID string) {
	keep := func(list []v1alpha1.SlotRequest) []v1alpha1.SlotRequest {
		out := list[:0]
		for _, h := range list {
			if h.WorkflowID != workflowID {
				out = append(out, h)
			}
		}
		return out
	}
	s.Holders, s.Queue = keep(s.Holders), keep(s.Queue)
	delete(s.told, workflowID)
}

// grant hands free slots to the head of the queue and tells everyone
// waiting their place.
func (s *slots) grant(ctx workflow.Context) {
	limit := max(s.Limit, 1)
	for len(s.Holders) < limit && len(s.Queue) > 0 {
		next := s.Queue[0]
		s.Queue = s.Queue[1:]
		s.Holders = append(s.Holders, next)
		s.tell(ctx, next, 0)
		s.logger.Info("Data mover slot granted", "operation", next.Operation, "workflowId", next.WorkflowID, "holders", len(s.Holders))
	}
	for i, w := range s.Queue {
		s.tell(ctx, w, i+1)
	}
}

// tell signals an operation its place, unless it knows it already; one
// that has ended no longer listens.
func (s *slots) tell(ctx workflow.Context, to v1alpha1.SlotRequest, position int) {
	if last, ok := s.told[to.WorkflowID]; ok && last == position {
		return
	}
	s.told[to.WorkflowID] = position
	f := workflow.SignalExternalWorkflow(ctx, to.WorkflowID, "", v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: s.Node, Position: position})
	workflow.Go(ctx, func(gctx workflow.Context) {
		if err := f.Get(gctx, nil); err != nil {
			s.logger.Debug("Slot update not delivered", "workflowId", to.WorkflowID, "error", err)
		}
	})
}
