package hooks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-backup/cairn/workflows"
)

// TestHooksRunWithoutTheRunLog: a location that cannot be opened does
// not stop a pod's hooks (a post hook unfreezes an application); each
// hook still gets its result, here that the pod is gone.
func TestHooksRunWithoutTheRunLog(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Kube: fake.NewSimpleClientset(), Log: zap.NewNop(), HeartbeatInterval: time.Hour}
	env.RegisterActivity(a.RunPodHooks)
	in := workflows.RunHooksInput{Backup: "b", Location: "nosuchscheme://nowhere", Namespace: "shop", Pod: "db", Phase: workflows.HookPost,
		Hooks: []workflows.PodHook{{Source: "spec hook unfreeze", Container: "db", Command: []string{"/unfreeze"}, OnError: workflows.HookFail,
			Timeout: time.Minute}}}
	v, err := env.ExecuteActivity(a.RunPodHooks, in)
	require.NoError(t, err)
	var res workflows.RunHooksResult
	require.NoError(t, v.Get(&res))
	require.Len(t, res.Results, 1)
	assert.Equal(t, "pod shop/db no longer exists", res.Results[0].Error)
}
