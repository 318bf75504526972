package starter

import (
	"context"

	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// addExtensionWaits sets the extensions a running backup's steps wait on,
// and how far the extensions' operations are while it waits for them,
// from their last heartbeats (the steps never signal it: that would grow
// the run's history with time). A backup that cannot be described keeps
// none.
func addExtensionWaits(ctx context.Context, c *Client, workflowID string, status *v1alpha1.BackupStatus) {
	qctx, cancel := context.WithTimeout(ctx, c.opts.StatusQueryTimeout)
	defer cancel()
	desc, err := c.temporal.DescribeWorkflowExecution(qctx, workflowID, "")
	if err != nil {
		return
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetHeartbeatDetails() == nil {
			continue
		}
		// Every waiting step's heartbeat has these fields: a collect
		// step's has no counts.
		var beat v1alpha1.OperationsProgress
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &beat) != nil {
			continue
		}
		status.Waiting = append(status.Waiting, beat.Waiting...)
		if beat.Total > 0 && status.ExtensionOperations == nil {
			counts := beat.OperationCounts
			status.ExtensionOperations = &counts
		}
	}
}
