package starter

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// resolveSchedule points a restore from a schedule at the schedule's
// newest Completed backup, in the schedule's location unless the spec
// names one. A failed or partly failed run newer than it is passed over,
// as Velero does.
func (c *Client) resolveSchedule(ctx context.Context, spec *v1alpha1.RestoreSpec) error {
	if spec.BackupName != "" {
		return &InvalidError{Problems: []string{fmt.Sprintf("give backupName (%s) or scheduleName (%s), not both", spec.BackupName, spec.ScheduleName)}}
	}
	v, err := c.GetSchedule(ctx, spec.ScheduleName)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("unknown schedule %q (list them with 'cairn schedule list'): %w", spec.ScheduleName, ErrNotFound)
	}
	if err != nil {
		return err
	}
	for _, run := range v.Backups { // newest first
		if run.Phase == v1alpha1.PhaseCompleted {
			spec.BackupName = run.Name
			if spec.StorageLocation == "" {
				spec.StorageLocation = v.Spec.Template.StorageLocation
			}
			return nil
		}
	}
	return &ConflictError{Message: fmt.Sprintf("schedule %q has no Completed backup to restore yet", spec.ScheduleName)}
}
