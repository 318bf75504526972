package flow

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// OnProgress calls apply with every progress signal the operations
// send (for the status query and the Temporal UI), in a coroutine.
func OnProgress(ctx workflow.Context, apply func(ctx workflow.Context, p v1alpha1.OperationProgress)) {
	ch := workflow.GetSignalChannel(ctx, v1alpha1.SignalOperationProgress)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var p v1alpha1.OperationProgress
			if !ch.Receive(gctx, &p) {
				return
			}
			apply(gctx, p)
		}
	})
}

// ChildOutcome is an operation's phase and error from its child
// workflow's answer, ctx being its run's. A child canceled while its run
// goes on (by hand in the Temporal UI) failed: what it was to do is
// missing from a run that may otherwise complete.
func ChildOutcome(ctx workflow.Context, err error, phase v1alpha1.OperationPhase, msg string) (v1alpha1.OperationPhase, string) {
	switch {
	case err != nil && temporal.IsCanceledError(err):
		if ctx.Err() != nil {
			return v1alpha1.OperationCanceled, "canceled by request"
		}
		return v1alpha1.OperationFailed, "canceled on its own while its run went on"
	case err != nil:
		return v1alpha1.OperationFailed, Reason(err)
	}
	return phase, msg
}

// PhaseCounts counts the phases of n operations, in phase order.
func PhaseCounts(n int, phase func(i int) v1alpha1.OperationPhase) string {
	counts := map[v1alpha1.OperationPhase]int{}
	for i := range n {
		counts[phase(i)]++
	}
	var parts []string
	for _, p := range []v1alpha1.OperationPhase{v1alpha1.OperationNew, v1alpha1.OperationInProgress, v1alpha1.OperationCompleted, v1alpha1.OperationFailed, v1alpha1.OperationCanceled} {
		if counts[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[p], p))
		}
	}
	return strings.Join(parts, ", ")
}
