package store

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// writeOperations records a backup's async operations in operations.json
// and its volumes in volumes.json. A backup without volumes has neither.
func writeOperations(ctx context.Context, run *runlog.Run, ops []v1alpha1.Operation) error {
	if len(ops) == 0 {
		return nil
	}
	volumes := v1alpha1.VolumesFile{Volumes: make([]v1alpha1.VolumeRecord, 0, len(ops))}
	for _, op := range ops {
		volumes.Volumes = append(volumes.Volumes, v1alpha1.VolumeRecord{Volume: op.Volume, Phase: op.Phase, Snapshot: op.Snapshot, Upload: op.Upload, Error: op.Error})
	}
	if err := run.Loc.WriteJSON(ctx, run.Keys.Operations(), v1alpha1.OperationsFile{Operations: ops}); err != nil {
		return err
	}
	return run.Loc.WriteJSON(ctx, run.Keys.Volumes(), volumes)
}

// operationErrors are the failed operations as results.json errors, each
// naming its claim.
func operationErrors(ops []v1alpha1.Operation) []v1alpha1.ResultEntry {
	var out []v1alpha1.ResultEntry
	for _, op := range ops {
		if op.Phase == v1alpha1.OperationFailed {
			out = append(out, v1alpha1.ResultEntry{Resource: "persistentvolumeclaims", Namespace: op.Volume.Namespace,
				Name: op.Volume.Claim, Message: op.Error})
		}
	}
	return out
}
