package store

import (
	"context"

	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/workflows"
)

// writeOperations records a backup's async operations in operations.json
// and its volumes in volumes.json. A backup without volumes has neither.
func writeOperations(ctx context.Context, run *runlog.Run, ops []workflows.Operation) error {
	if len(ops) == 0 {
		return nil
	}
	volumes := workflows.VolumesFile{Volumes: make([]workflows.VolumeRecord, 0, len(ops))}
	for _, op := range ops {
		volumes.Volumes = append(volumes.Volumes, workflows.VolumeRecord{Volume: op.Volume, Phase: op.Phase, Snapshot: op.Snapshot, Upload: op.Upload, Error: op.Error})
	}
	if err := run.Loc.WriteJSON(ctx, run.Keys.Operations(), workflows.OperationsFile{Operations: ops}); err != nil {
		return err
	}
	return run.Loc.WriteJSON(ctx, run.Keys.Volumes(), volumes)
}

// operationErrors are the failed operations as results.json errors, each
// naming its claim.
func operationErrors(ops []workflows.Operation) []workflows.ResultEntry {
	var out []workflows.ResultEntry
	for _, op := range ops {
		if op.Phase == workflows.OperationFailed {
			out = append(out, workflows.ResultEntry{Resource: "persistentvolumeclaims", Namespace: op.Volume.Namespace,
				Name: op.Volume.Claim, Message: op.Error})
		}
	}
	return out
}
