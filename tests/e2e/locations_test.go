package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/workflows"
)

// TestWorkerKeepsEveryWritableLocation: a worker given named locations
// expires and maintains each it may write, on a schedule of its own, and
// leaves a read-only one alone.
func TestWorkerKeepsEveryWritableLocation(t *testing.T) {
	s := newStack(t)
	s.startWorker("--location", s.location, "--location-name", "offsite=file://"+t.TempDir(),
		"--location-name", "archive=file://"+t.TempDir()+";readonly")
	ctx := context.Background()
	want := []string{
		workflows.ExpireScheduleID, workflows.ExpireScheduleID + "-offsite",
		workflows.MaintenanceScheduleID, workflows.MaintenanceScheduleID + "-offsite",
	}
	// The worker sets them up once it polls; each is waited for.
	for _, id := range want {
		require.Eventually(t, func() bool {
			_, err := s.temporalC.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "schedule %s", id)
	}
	desc, err := s.temporalC.ScheduleClient().GetHandle(ctx, workflows.ExpireScheduleID+"-offsite").Describe(ctx)
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	assert.Equal(t, "expire-backups-offsite", action.ID)

	// The worker goes through archive before offsite: had it made
	// archive's schedules, they would be there by now.
	for _, base := range []string{workflows.ExpireScheduleID, workflows.MaintenanceScheduleID} {
		_, err := s.temporalC.ScheduleClient().GetHandle(ctx, base+"-archive").Describe(ctx)
		var notFound *serviceerror.NotFound
		assert.ErrorAs(t, err, &notFound, "no schedule writes the read-only archive")
	}
}
