package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// writeOperations records a backup's async operations in operations.json,
// its volumes' first and its extensions' after them, and its volumes in
// volumes.json. A backup without operations has neither; one without
// volumes has no volumes.json.
func writeOperations(ctx context.Context, run *runlog.Run, volumeOps, extensionOps []v1alpha1.Operation) error {
	if len(volumeOps)+len(extensionOps) == 0 {
		return nil
	}
	all := append(append([]v1alpha1.Operation{}, volumeOps...), extensionOps...)
	if err := run.Loc.WriteJSON(ctx, run.Keys.Operations(), v1alpha1.OperationsFile{Operations: all}); err != nil {
		return err
	}
	if len(volumeOps) == 0 {
		return nil
	}
	volumes := v1alpha1.VolumesFile{Volumes: make([]v1alpha1.VolumeRecord, 0, len(volumeOps))}
	for _, op := range volumeOps {
		volumes.Volumes = append(volumes.Volumes, v1alpha1.VolumeRecord{Volume: op.Volume, Phase: op.Phase, Snapshot: op.Snapshot, Upload: op.Upload, Error: op.Error})
	}
	return run.Loc.WriteJSON(ctx, run.Keys.Volumes(), volumes)
}

// extensionOperations reads how the operations extensions started ended,
// as the operations step recorded them; none when it did not run.
func extensionOperations(ctx context.Context, run *runlog.Run) ([]v1alpha1.Operation, error) {
	var ops []v1alpha1.Operation
	err := run.Loc.ReadLines(ctx, run.Keys.OperationsRun(), func(line []byte) error {
		var op v1alpha1.Operation
		if err := json.Unmarshal(line, &op); err != nil {
			return fmt.Errorf("%s: %w", run.Keys.OperationsRun(), err)
		}
		ops = append(ops, op)
		return nil
	})
	if errors.Is(err, location.ErrNotFound) {
		return nil, nil
	}
	return ops, err
}

// operationErrors are the failed operations as results.json errors, each
// naming its claim.
func operationErrors(ops []v1alpha1.Operation) []v1alpha1.ResultEntry {
	var out []v1alpha1.ResultEntry
	for _, op := range ops {
		switch {
		case op.Phase != v1alpha1.OperationFailed && op.Phase != v1alpha1.OperationCanceled:
		case op.Item != nil:
			out = append(out, v1alpha1.ResultEntry{Resource: op.Item.Resource, Namespace: op.Item.Namespace, Name: op.Item.Name, Message: op.Error})
		case op.Phase == v1alpha1.OperationFailed:
			out = append(out, v1alpha1.ResultEntry{Resource: "persistentvolumeclaims", Namespace: op.Volume.Namespace,
				Name: op.Volume.Claim, Message: op.Error})
		}
	}
	return out
}
