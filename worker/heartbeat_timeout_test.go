package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/deletion"
)

// maintenanceHeartbeatTimeout runs a maintenance workflow on a test worker
// with the given interceptors and returns the heartbeat timeout its step
// was scheduled with.
func maintenanceHeartbeatTimeout(t *testing.T, interceptors ...interceptor.WorkerInterceptor) time.Duration {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: interceptors})
	var got time.Duration
	maintain := func(ctx context.Context, _ v1alpha1.MaintenanceRequest) (*v1alpha1.MaintenanceResult, error) {
		got = activity.GetInfo(ctx).HeartbeatTimeout
		return &v1alpha1.MaintenanceResult{}, nil
	}
	env.RegisterActivityWithOptions(maintain, activity.RegisterOptions{Name: "MaintainRepository"})
	env.ExecuteWorkflow(deletion.RepositoryMaintenanceWorkflow, v1alpha1.MaintenanceRequest{Location: "mem://"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	return got
}

func TestWorkerHeartbeatTimeoutReachesItsRunsSteps(t *testing.T) {
	assert.Equal(t, 2*v1alpha1.DefaultHeartbeatTimeout, maintenanceHeartbeatTimeout(t),
		"without the option, maintenance heartbeats within twice the default")
	assert.Equal(t, 6*time.Second, maintenanceHeartbeatTimeout(t, &heartbeatTimeouts{timeout: 3 * time.Second}),
		"the worker's option reaches the step (maintenance gets twice it)")
	assert.Equal(t, 2*v1alpha1.DefaultHeartbeatTimeout, maintenanceHeartbeatTimeout(t, &heartbeatTimeouts{}),
		"a zero option keeps the default")
}
