package v1alpha1

import "time"

// Data mover slots: at most Limit data movers at once per node, across
// every backup and restore, granted in the order asked. One workflow per
// node holds the queue; operations ask it by signal and it answers by
// signal.
const (
	SignalAcquireSlot = "acquire-slot"
	SignalReleaseSlot = "release-slot"
	// SignalSlotUpdate tells a waiting operation its place in line, and 0
	// once it holds a slot.
	SignalSlotUpdate = "slot-update"
	// QuerySlots returns the node's SlotsState.
	QuerySlots = "slots"
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
	// HolderCheck is how often a full node with operations waiting
	// checks that its holders still run (0: DefaultSlotHolderCheck).
	HolderCheck time.Duration `json:"holderCheck,omitempty"`
}

// DefaultSlotHolderCheck is SlotsState.HolderCheck's default.
const DefaultSlotHolderCheck = 2 * time.Minute

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
