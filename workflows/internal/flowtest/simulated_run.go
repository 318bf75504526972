package flowtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

// SimulatedRun is what one run of a workflow on a simulated node did.
type SimulatedRun struct {
	Counted *HistoryEvents
	// MostWaiting is the longest the node's line was.
	MostWaiting int
	// Took is the run's length on the environment's clock.
	Took time.Duration
}

// RunOnNode runs workflow name with req in env, whose data movers node
// places, counting what each run asks of Temporal, and decodes the
// workflow's result into result.
func RunOnNode(t *testing.T, env *testsuite.TestWorkflowEnvironment, node *SimulatedNode, name string, req, result any) SimulatedRun {
	t.Helper()
	counted := NewHistoryEvents()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{counted}})
	start := env.Now()
	env.ExecuteWorkflow(name, req)
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, env.GetWorkflowResult(result))
	return SimulatedRun{Counted: counted, MostWaiting: node.MostWaiting, Took: env.Now().Sub(start)}
}

// AssertBoundedWhateverTheDuration checks two runs of a workflow of type
// parent with children of type child on a simulated node, the same but
// for how long their data moves took: the longer took at least longest,
// volumes waited in line for the node's slots in both, the parent and
// its children asked the same of Temporal in both, and the longer run's
// histories stay under parentBound and childBound events.
func AssertBoundedWhateverTheDuration(t *testing.T, short, long SimulatedRun, longest time.Duration, parent, child string, parentBound, childBound int) {
	t.Helper()
	assert.GreaterOrEqual(t, long.Took, longest, "the longer run's length")
	assert.Positive(t, short.MostWaiting, "volumes waited in line for the node's slots")
	assert.Positive(t, long.MostWaiting, "volumes waited in line for the node's slots")
	parents := short.Counted.OfType(parent)
	require.Len(t, parents, 1)
	longParent := long.Counted.OfType(parent)
	require.Len(t, longParent, 1)
	assert.Equal(t, parents[0], longParent[0], "the %s history does not grow with the run's length:\nshort: %s\nlong: %s",
		parent, parents[0], longParent[0])
	children := long.Counted.OfType(child)
	assert.Equal(t, Sorted(short.Counted.OfType(child)), Sorted(children), "no %s history grows with the run's length", child)

	t.Logf("the longer run: %s %s", parent, longParent[0])
	assert.LessOrEqual(t, longParent[0].Events(), parentBound, long.Counted.Summary())
	for _, c := range children {
		assert.LessOrEqual(t, c.Events(), childBound, "a %s history: %s", child, c)
	}
}
