package worker

import (
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/workflows"
)

// heartbeatTimeouts hands every workflow the worker runs the heartbeat
// timeout of its options (workflows.HeartbeatTimeout).
type heartbeatTimeouts struct {
	interceptor.WorkerInterceptorBase
	timeout time.Duration
}

func (h *heartbeatTimeouts) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &heartbeatTimeoutWorkflow{timeout: h.timeout}
	i.Next = next
	return i
}

type heartbeatTimeoutWorkflow struct {
	interceptor.WorkflowInboundInterceptorBase
	timeout time.Duration
}

func (w *heartbeatTimeoutWorkflow) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	return w.Next.ExecuteWorkflow(workflows.WithHeartbeatTimeout(ctx, w.timeout), in)
}
