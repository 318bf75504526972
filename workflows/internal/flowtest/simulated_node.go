package flowtest

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
)

// SimulatedNode stands in, in a test environment, for one node's data
// mover slots workflow: it grants Limit slots in request order and tells
// each operation waiting its place when it changes, as
// DataMoverSlotsWorkflow does. A slot is free again once its operation's
// child workflow has ended.
//
// It sets the environment's activity-completed and child-completed
// listeners: they run on the environment's main loop, where signalling a
// workflow is safe.
type SimulatedNode struct {
	env     *testsuite.TestWorkflowEnvironment
	name    string
	limit   int
	holders []string
	queue   []string
	told    map[string]int
	// MostWaiting is the longest the line has been (not counting who got
	// a slot at once).
	MostWaiting int
}

// SimulateNode places the data movers of volumes on node name, limit at
// once. Volume i asks for its slot i+1 seconds after its data move
// starts, so no two ask at the same moment and the line moves the same
// way in every run of a test. The environment must have the volume fakes
// registered (RegisterVolumeFakes).
func SimulateNode(env *testsuite.TestWorkflowEnvironment, name string, limit int, volumes []v1alpha1.Volume) *SimulatedNode {
	n := &SimulatedNode{env: env, name: name, limit: limit, told: map[string]int{}}
	for i, v := range volumes {
		env.OnActivity(exposeActs.PlaceDataMover, mock.Anything, mock.MatchedBy(func(in v1alpha1.ExposeInput) bool { return in.Volume.Key() == v.Key() })).
			Return(&v1alpha1.Placement{Node: name, Limit: limit}, nil).After(time.Duration(i+1) * time.Second).Once()
	}
	env.OnActivity(exposeActs.RequestDataMoverSlot, mock.Anything, mock.Anything).Return(nil)
	env.OnSignalExternalWorkflow(mock.Anything, v1alpha1.DataMoverSlotsWorkflowID(name), "", v1alpha1.SignalReleaseSlot, mock.Anything).Return(nil)
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
		if err == nil && info.ActivityType.Name == workflows.ActivityName(exposeActs.RequestDataMoverSlot) {
			n.ask(info.WorkflowExecution.ID)
		}
	})
	env.SetOnChildWorkflowCompletedListener(func(info *workflow.Info, _ converter.EncodedValue, _ error) {
		n.release(info.WorkflowExecution.ID)
	})
	return n
}

// ask puts an operation in line.
func (n *SimulatedNode) ask(workflowID string) {
	n.queue = append(n.queue, workflowID)
	n.grant()
	n.MostWaiting = max(n.MostWaiting, len(n.queue))
}

func (n *SimulatedNode) release(workflowID string) {
	for i, h := range n.holders {
		if h == workflowID {
			n.holders = append(n.holders[:i], n.holders[i+1:]...)
			n.grant()
			return
		}
	}
}

func (n *SimulatedNode) grant() {
	for len(n.holders) < n.limit && len(n.queue) > 0 {
		n.holders = append(n.holders, n.queue[0])
		n.tell(n.queue[0], 0)
		n.queue = n.queue[1:]
	}
	for i, id := range n.queue {
		n.tell(id, i+1)
	}
}

func (n *SimulatedNode) tell(workflowID string, position int) {
	if last, ok := n.told[workflowID]; ok && last == position {
		return
	}
	n.told[workflowID] = position
	_ = n.env.SignalWorkflowByID(workflowID, v1alpha1.SignalSlotUpdate, v1alpha1.SlotUpdate{Node: n.name, Position: position})
}

// MoverHeartbeat is how often the fake data movers of LongMoves report
// progress: as often as the real ones (liveInterval in
// activities/datamover).
const MoverHeartbeat = 2 * time.Second

// LongMoves fakes task, a data mover's task, for n volumes: the one
// whose input is volume i (of) lasts moveFor plus 2^i ms on the workflow
// clock, heartbeating its progress every MoverHeartbeat of it as a real
// data mover does, and returns result. No two moves end at the same
// moment (the node staggers the asking for slots too), so the node's
// line moves the same way in every run of a test.
func LongMoves[In, Out any](env *testsuite.TestWorkflowEnvironment, task any, moveFor time.Duration, n int,
	of func(In) int, result func(In) *Out) {
	for i := range n {
		took := moveFor + time.Duration(1<<i)*time.Millisecond
		env.OnActivity(task, mock.Anything, mock.MatchedBy(func(in In) bool { return of(in) == i })).
			Return(heartbeatFor(took, result)).After(took).Once()
	}
}

// heartbeatFor heartbeats as a data mover that worked for d does.
func heartbeatFor[In, Out any](d time.Duration, result func(In) *Out) func(context.Context, In) (*Out, error) {
	return func(ctx context.Context, in In) (*Out, error) {
		beats := int(d / MoverHeartbeat)
		for i := 1; i <= beats; i++ {
			activity.RecordHeartbeat(ctx, v1alpha1.MoverProgress{Progress: fmt.Sprintf("moving: %d of %d", i, beats)})
		}
		return result(in), nil
	}
}
