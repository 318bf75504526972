package hooks

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestHooksRunWithoutTheRunLog: a location that cannot be opened does
// not stop a pod's hooks (a post hook unfreezes an application); each
// hook still gets its result, here that the pod is gone.
func TestHooksRunWithoutTheRunLog(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Kube: fake.NewSimpleClientset(), Log: zap.NewNop(), HeartbeatInterval: time.Hour}
	env.RegisterActivity(a.RunPodHooks)
	in := v1alpha1.RunHooksInput{Backup: "b", Location: "nosuchscheme://nowhere", Namespace: "shop", Pod: "db", Phase: v1alpha1.HookPost,
		Hooks: []v1alpha1.PodHook{{Source: "spec hook unfreeze", Container: "db", Command: []string{"/unfreeze"}, OnError: v1alpha1.HookFail,
			Timeout: time.Minute}}}
	v, err := env.ExecuteActivity(a.RunPodHooks, in)
	require.NoError(t, err)
	var res v1alpha1.RunHooksResult
	require.NoError(t, v.Get(&res))
	require.Len(t, res.Results, 1)
	assert.Equal(t, "pod shop/db no longer exists", res.Results[0].Error)
}

// TestHooksHeartbeatWithinTheStepsTimeout: a run may set its heartbeat
// timeout below the hooks' 5 s beat; the beat follows it down.
func TestHooksHeartbeatWithinTheStepsTimeout(t *testing.T) {
	a := &Activities{}
	interval := func(ctx context.Context) (time.Duration, error) { return a.heartbeatInterval(ctx), nil }
	run := func(timeout time.Duration) time.Duration {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterActivity(interval)
		env.ExecuteWorkflow(func(ctx workflow.Context) (time.Duration, error) {
			ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: timeout})
			var d time.Duration
			err := workflow.ExecuteActivity(ctx, interval).Get(ctx, &d)
			return d, err
		})
		require.NoError(t, env.GetWorkflowError())
		var d time.Duration
		require.NoError(t, env.GetWorkflowResult(&d))
		return d
	}
	assert.Equal(t, time.Second, run(3*time.Second), "a third of a 3 s timeout")
	assert.Equal(t, 5*time.Second, run(time.Minute), "the default beat under a long timeout")
}
