package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestWorkerKeepsEveryWritableLocation: a worker given named locations
// expires and maintains each it may write, on a schedule of its own, and
// leaves a read-only one alone. A worker started without a location, or
// with it read-only, deletes its schedules.
func TestWorkerKeepsEveryWritableLocation(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	offsite := "file://" + t.TempDir()
	w := s.startWorker("--location", s.location, "--location-name", "offsite="+offsite,
		"--location-name", "spare=file://"+t.TempDir(),
		"--location-name", "archive=file://"+t.TempDir()+";readonly")
	ctx := context.Background()
	want := []string{
		v1alpha1.ExpireScheduleID, v1alpha1.ExpireScheduleID + "-offsite",
		v1alpha1.MaintenanceScheduleID, v1alpha1.MaintenanceScheduleID + "-offsite",
		v1alpha1.ExpireScheduleID + "-spare", v1alpha1.MaintenanceScheduleID + "-spare",
	}
	// The worker sets them up once it polls; each is waited for.
	for _, id := range want {
		until(t, func() bool {
			_, err := s.temporalC.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
			return err == nil
		}, time.Minute, 100*time.Millisecond, "schedule %s", id)
	}
	desc, err := s.temporalC.ScheduleClient().GetHandle(ctx, v1alpha1.ExpireScheduleID+"-offsite").Describe(ctx)
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	assert.Equal(t, "expire-backups-offsite", action.ID)

	// The worker goes through archive before offsite: had it made
	// archive's schedules, they would be there by now.
	for _, base := range []string{v1alpha1.ExpireScheduleID, v1alpha1.MaintenanceScheduleID} {
		_, err := s.temporalC.ScheduleClient().GetHandle(ctx, base+"-archive").Describe(ctx)
		var notFound *serviceerror.NotFound
		assert.ErrorAs(t, err, &notFound, "no schedule writes the read-only archive")
	}

	t.Run("locations taken away lose their schedules", func(t *testing.T) {
		// The next worker finds the schedules by listing them: wait
		// until the list (eventually consistent) shows them.
		until(t, func() bool {
			listed := scheduleIDs(t, s)
			for _, id := range want {
				if !listed[id] {
					return false
				}
			}
			return true
		}, time.Minute, 200*time.Millisecond)
		w.stop()
		s.startWorker("--location", s.location, "--location-name", "offsite="+offsite+";readonly")
		for _, id := range []string{v1alpha1.ExpireScheduleID + "-offsite", v1alpha1.MaintenanceScheduleID + "-offsite",
			v1alpha1.ExpireScheduleID + "-spare", v1alpha1.MaintenanceScheduleID + "-spare"} {
			until(t, func() bool {
				_, err := s.temporalC.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
				var notFound *serviceerror.NotFound
				return errors.As(err, &notFound)
			}, time.Minute, 100*time.Millisecond, "schedule %s is deleted", id)
		}
		for _, id := range []string{v1alpha1.ExpireScheduleID, v1alpha1.MaintenanceScheduleID} {
			_, err := s.temporalC.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
			assert.NoError(t, err, "the default location keeps %s", id)
		}
	})
}

// scheduleIDs lists the IDs of the namespace's Temporal Schedules.
func scheduleIDs(t *testing.T, s *stack) map[string]bool {
	t.Helper()
	ctx := context.Background()
	it, err := s.temporalC.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 100})
	require.NoError(t, err)
	ids := map[string]bool{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		ids[e.ID] = true
	}
	return ids
}
