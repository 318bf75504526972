package starter

import (
	"context"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// moverDescribes bounds the volume workflows one view describes at once.
const moverDescribes = 8

// addMoverProgress sets the progress of every volume whose data is still
// moving from its data mover's last heartbeat. The data movers never
// signal it (that would grow the run's history with time); the pending
// activity of the volume's workflow holds it. A volume whose workflow
// cannot be read keeps the progress its workflow last reported.
func addMoverProgress(ctx context.Context, c *Client, moving []moverVolume) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(moverDescribes)
	for _, m := range moving {
		g.Go(func() error {
			qctx, cancel := context.WithTimeout(gctx, c.opts.StatusQueryTimeout)
			defer cancel()
			desc, err := c.temporal.DescribeWorkflowExecution(qctx, m.workflowID, "")
			if err != nil {
				return nil
			}
			if p, ok := moverProgressOf(desc); ok {
				*m.progress = p
			}
			return nil
		})
	}
	_ = g.Wait() // each volume's failure only leaves its progress as it was
}

// moverVolume is one volume a data mover may be working on: its workflow
// and where its progress goes.
type moverVolume struct {
	workflowID string
	progress   *string
}

// moverProgressOf is the progress a pending activity of a volume's
// workflow last heartbeated, when one did.
func moverProgressOf(desc *workflowservice.DescribeWorkflowExecutionResponse) (string, bool) {
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetHeartbeatDetails() == nil {
			continue
		}
		var p v1alpha1.MoverProgress
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil && p.Progress != "" {
			return p.Progress, true
		}
	}
	return "", false
}

// movingOperations are a backup's data moves still in progress: moved
// snapshots and pod volumes' copies.
func movingOperations(s *v1alpha1.BackupStatus) []moverVolume {
	var out []moverVolume
	for i := range s.Operations {
		op := &s.Operations[i]
		moves := op.Kind == v1alpha1.OperationKindDataUpload || op.Kind == v1alpha1.OperationKindPodVolumeBackup
		if op.Phase == v1alpha1.OperationInProgress && op.WorkflowID != "" && moves {
			out = append(out, moverVolume{workflowID: op.WorkflowID, progress: &op.Progress})
		}
	}
	return out
}

// movingVolumes are a restore's volumes still in progress.
func movingVolumes(s *v1alpha1.RestoreStatus) []moverVolume {
	var out []moverVolume
	for i := range s.Volumes {
		v := &s.Volumes[i]
		if v.Phase == v1alpha1.OperationInProgress && v.WorkflowID != "" {
			out = append(out, moverVolume{workflowID: v.WorkflowID, progress: &v.Progress})
		}
	}
	return out
}
