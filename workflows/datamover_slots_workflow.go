package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// Data mover slots: at most Limit data movers at once per node, across
// every backup and restore, granted in the order asked. One workflow per
// node holds the queue; operations ask it by signal and it answers by
// signal.
const (
	DataMoverSlotsWorkflowName   = "DataMoverSlots"
	RequestDataMoverSlotActivity = "RequestDataMoverSlot"
	// ClosedSlotHoldersActivity says which slot holders' workflows have
	// closed.
	ClosedSlotHoldersActivity = "ClosedSlotHolders"
	PlaceDataMoverActivity    = "PlaceDataMover"
	SignalAcquireSlot         = "acquire-slot"
	SignalReleaseSlot         = "release-slot"
	// SignalSlotUpdate tells a waiting operation its place in line, and 0
	// once it holds a slot.
	SignalSlotUpdate = "slot-update"
	// QuerySlots returns the node's SlotsState.
	QuerySlots         = "slots"
	KindDataMoverSlots = "datamover-slots"
	// slotsIdleExit ends a node's slots workflow that has been empty this
	// long; the next request starts it again.
	slotsIdleExit = 5 * time.Minute
	// slotsHolderCheck is how often a full node with operations waiting
	// checks that its holders still run: one terminated (not canceled)
	// never gives its slot back.
	slotsHolderCheck = 2 * time.Minute
)

// DataMoverSlotsWorkflowID is the slots workflow of a node.
func DataMoverSlotsWorkflowID(node string) string { return "datamover-slots/" + node }

// SlotRequest is one operation asking for, or giving back, a slot.
type SlotRequest struct {
	// WorkflowID is the operation's workflow, which the answer goes to.
	WorkflowID string `json:"workflowId"`
	Operation  string `json:"operation"`
	// Limit is the node's data mover limit as the asker's worker knows it.
	Limit int `json:"limit,omitempty"`
}

// SlotUpdate is what a waiting operation is told.
type SlotUpdate struct {
	Node string `json:"node"`
	// Position is 0 once the slot is granted, else the place in line
	// (1: next).
	Position int `json:"position"`
}

// SlotsState is a node's slots: who holds one, who waits.
type SlotsState struct {
	Node    string        `json:"node"`
	Limit   int           `json:"limit"`
	Holders []SlotRequest `json:"holders"`
	Queue   []SlotRequest `json:"queue"`
}

// SlotAsk is a request for a slot on a node.
type SlotAsk struct {
	Node    string      `json:"node"`
	Request SlotRequest `json:"request"`
}

// Placement is where an operation's data mover will run and the node's
// limit.
type Placement struct {
	Node  string `json:"node"`
	Limit int    `json:"limit"`
}

// DataMoverSlotsWorkflow grants a node's data mover slots in order.
func DataMoverSlotsWorkflow(ctx workflow.Context, st SlotsState) error {
	s := &slots{SlotsState: st, told: map[string]int{}, logger: log.With(workflow.GetLogger(ctx), "node", st.Node)}
	if err := workflow.SetQueryHandler(ctx, QuerySlots, func() (*SlotsState, error) { return &s.SlotsState, nil }); err != nil {
		return fmt.Errorf("register slots query: %w", err)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindDataMoverSlots), SearchAttrName.ValueSet(st.Node)); err != nil {
		return fmt.Errorf("set search attributes: %w", err)
	}
	acquire := workflow.GetSignalChannel(ctx, SignalAcquireSlot)
	release := workflow.GetSignalChannel(ctx, SignalReleaseSlot)
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
				return workflow.NewContinueAsNewError(ctx, DataMoverSlotsWorkflowName, s.SlotsState)
			}
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var r SlotRequest
			c.Receive(ctx, &r)
			s.add(r)
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var r SlotRequest
			c.Receive(ctx, &r)
			s.remove(r.WorkflowID)
		})
		timedOut, checkDue := false, false
		tctx, cancelTimer := workflow.WithCancel(ctx)
		if idle {
			sel.AddFuture(workflow.NewTimer(tctx, slotsIdleExit), func(workflow.Future) { timedOut = true })
		}
		if s.blocked() {
			sel.AddFuture(workflow.NewTimer(tctx, slotsHolderCheck), func(workflow.Future) { checkDue = true })
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
	SlotsState
	// told is the place each operation was last told, so an unchanged
	// place is not signalled again.
	told   map[string]int
	logger log.Logger
}

// blocked says the node's slots are all held and operations wait.
func (s *slots) blocked() bool {
	return len(s.Queue) > 0 && len(s.Holders) >= max(s.Limit, 1)
}

// dropClosedHolders frees the slots of holders whose workflow has closed
// without giving theirs back.
func (s *slots) dropClosedHolders(ctx workflow.Context) {
	actx := workflow.WithActivityOptions(ctx, activityOptions(time.Minute, defaultHeartbeatTimeout))
	var closed []string
	if err := workflow.ExecuteActivity(actx, ClosedSlotHoldersActivity, s.Holders).Get(ctx, &closed); err != nil {
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
		var r SlotRequest
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
func (s *slots) add(r SlotRequest) {
	if r.Limit > 0 {
		s.Limit = r.Limit
	}
	for _, h := range append(append([]SlotRequest{}, s.Holders...), s.Queue...) {
		if h.WorkflowID == r.WorkflowID {
			return
		}
	}
	s.Queue = append(s.Queue, r)
}

func (s *slots) remove(workflowID string) {
	keep := func(list []SlotRequest) []SlotRequest {
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
func (s *slots) tell(ctx workflow.Context, to SlotRequest, position int) {
	if last, ok := s.told[to.WorkflowID]; ok && last == position {
		return
	}
	s.told[to.WorkflowID] = position
	f := workflow.SignalExternalWorkflow(ctx, to.WorkflowID, "", SignalSlotUpdate, SlotUpdate{Node: s.Node, Position: position})
	workflow.Go(ctx, func(gctx workflow.Context) {
		if err := f.Get(gctx, nil); err != nil {
			s.logger.Debug("Slot update not delivered", "workflowId", to.WorkflowID, "error", err)
		}
	})
}
