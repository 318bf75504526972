package starter

import (
	"context"

	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// extensionWaits are the extensions a running backup's or restore's
// steps wait on, and how far the extensions' operations are while it
// waits for them, from their last heartbeats (the steps never signal it:
// that would grow the run's history with time). A run that cannot be
// described has none.
func extensionWaits(ctx context.Context, c *Client, workflowID string) (waiting []v1alpha1.ExtensionWait, counts *v1alpha1.OperationCounts) {
	qctx, cancel := context.WithTimeout(ctx, c.opts.StatusQueryTimeout)
	defer cancel()
	desc, err := c.temporal.DescribeWorkflowExecution(qctx, workflowID, "")
	if err != nil {
		return nil, nil
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
		waiting = append(waiting, beat.Waiting...)
		if beat.Total > 0 && counts == nil {
			c := beat.OperationCounts
			counts = &c
		}
	}
	return waiting, counts
}

// addExtensionWaits sets a running backup's extension waits.
func addExtensionWaits(ctx context.Context, c *Client, workflowID string, status *v1alpha1.BackupStatus) {
	waiting, counts := extensionWaits(ctx, c, workflowID)
	status.Waiting = append(status.Waiting, waiting...)
	if status.ExtensionOperations == nil {
		status.ExtensionOperations = counts
	}
}

// addRestoreExtensionWaits sets a running restore's extension waits.
func addRestoreExtensionWaits(ctx context.Context, c *Client, workflowID string, status *v1alpha1.RestoreStatus) {
	waiting, counts := extensionWaits(ctx, c, workflowID)
	status.Waiting = append(status.Waiting, waiting...)
	if status.ExtensionOperations == nil {
		status.ExtensionOperations = counts
	}
}
