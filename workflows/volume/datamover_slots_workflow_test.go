package volume

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// TestSlotsGrantInOrderUpToTheLimit: with a limit of one, the first asker
// gets the slot, the others are told their place; each release moves the
// line on; an empty node's workflow ends after a while.
func TestSlotsGrantInOrderUpToTheLimit(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	// The places each asker is told, in order. The test environment
	// delivers the signals of one step on goroutines of their own, so
	// only each asker's own sequence has an order.
	var mu sync.Mutex
	told := map[string][]int{}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", v1alpha1.SignalSlotUpdate, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			told[workflowID] = append(told[workflowID], arg.(v1alpha1.SlotUpdate).Position)
			return nil
		})
	ask := func(at time.Duration, id string) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: id, Limit: 1})
		}, at)
	}
	release := func(at time.Duration, id string) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(v1alpha1.SignalReleaseSlot, v1alpha1.SlotRequest{WorkflowID: id}) }, at)
	}
	ask(time.Second, "a")
	ask(2*time.Second, "b")
	ask(3*time.Second, "c")
	ask(4*time.Second, "b") // a retried request keeps its place
	release(5*time.Second, "a")
	release(6*time.Second, "b")
	release(7*time.Second, "c")
	var mid v1alpha1.SlotsState
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(v1alpha1.QuerySlots)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
	}, 4500*time.Millisecond)

	env.ExecuteWorkflow(DataMoverSlotsWorkflow, v1alpha1.SlotsState{Node: "n1", Limit: 1})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "an empty node's slots workflow ends")
	assert.Equal(t, map[string][]int{"a": {0}, "b": {1, 0}, "c": {2, 1, 0}}, told)
	require.Len(t, mid.Holders, 1)
	assert.Equal(t, "a", mid.Holders[0].WorkflowID)
	assert.Len(t, mid.Queue, 2, "the repeated request was not queued twice")
}

// TestSlotOfAClosedHolderIsFreed: a holder whose workflow closed without
// giving its slot back (terminated) loses it at the next check while
// others wait; the next in line gets it.
func TestSlotOfAClosedHolderIsFreed(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	flowtest.Fake(env, exposeActs.ClosedSlotHolders, func(context.Context, []v1alpha1.SlotRequest) ([]string, error) { return nil, nil })
	var mu sync.Mutex // signals are delivered on goroutines of their own
	var granted []string
	grants := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), granted...) }
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", v1alpha1.SignalSlotUpdate, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			if arg.(v1alpha1.SlotUpdate).Position == 0 {
				granted = append(granted, workflowID)
			}
			return nil
		})
	env.OnActivity(exposeActs.ClosedSlotHolders, mock.Anything, mock.Anything).Return(
		func(_ context.Context, holders []v1alpha1.SlotRequest) ([]string, error) {
			require.Len(t, holders, 1)
			return []string{holders[0].WorkflowID}, nil
		}).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: "terminated", Limit: 1})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: "waiting", Limit: 1})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		assert.Equal(t, []string{"terminated", "waiting"}, grants(), "the waiting operation got the freed slot")
		env.SignalWorkflow(v1alpha1.SignalReleaseSlot, v1alpha1.SlotRequest{WorkflowID: "waiting"})
	}, 2*v1alpha1.DefaultSlotHolderCheck)

	env.ExecuteWorkflow(DataMoverSlotsWorkflow, v1alpha1.SlotsState{Node: "n1", Limit: 1})
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []string{"terminated", "waiting"}, grants())
	env.AssertExpectations(t)
}

// TestSlotsContinueAsNewKeepsTheLine: when Temporal suggests it, a busy
// node's slots workflow continues as new with its holder and its queue in
// the order they asked.
func TestSlotsContinueAsNewKeepsTheLine(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", v1alpha1.SignalSlotUpdate, mock.Anything).Return(nil)
	for i, id := range []string{"a", "b", "c"} {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: id, Limit: 1})
		},
			time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() {
		env.SetContinueAsNewSuggested(true)
		env.SignalWorkflow(v1alpha1.SignalAcquireSlot, v1alpha1.SlotRequest{WorkflowID: "d", Limit: 1})
	}, 4*time.Second)

	env.ExecuteWorkflow(DataMoverSlotsWorkflow, v1alpha1.SlotsState{Node: "n1", Limit: 1})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can, "a busy node continues as new when suggested")
	var next v1alpha1.SlotsState
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.Holders, 1)
	assert.Equal(t, "a", next.Holders[0].WorkflowID)
	var queued []string
	for _, r := range next.Queue {
		queued = append(queued, r.WorkflowID)
	}
	assert.Equal(t, []string{"b", "c", "d"}, queued, "the line keeps its order")
}

// TestSlotPlaceIsReportedEachTimeItHalves: a volume that moves up a line
// of 100 one place at a time reports its place 7 times, not 100.
func TestSlotPlaceIsReportedEachTimeItHalves(t *testing.T) {
	var reports []int
	reported := 0
	for position := 100; position > 0; position-- {
		if slotReportDue(reported, position) {
			reported = position
			reports = append(reports, position)
		}
	}
	assert.Equal(t, []int{100, 50, 25, 12, 6, 3, 1}, reports)
}
