package etcd

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
)

// CommitEtcdSnapshot writes snapshot.json, the mark of a complete,
// verified snapshot.
func (a *Activities) CommitEtcdSnapshot(ctx context.Context, in v1alpha1.CommitEtcdSnapshotInput) error {
	loc, err := a.Locations.Open(ctx, in.Spec.StorageLocation)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	info := activity.GetInfo(ctx)
	meta := v1alpha1.EtcdSnapshotMetadata{APIVersion: v1alpha1.MetadataAPIVersion, Kind: v1alpha1.MetadataKindEtcdSnapshot,
		Name: in.Spec.Name, Spec: in.Spec, Status: in.Status, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		EncryptionKeyID: loc.KeyID()}
	if err := loc.WriteJSON(ctx, location.EtcdSnapshot(in.Spec.Name).Metadata(), meta); err != nil {
		return err
	}
	metrics.RunEnded(v1alpha1.KindEtcdSnapshot, string(in.Status.Phase), in.Status.StartTime, in.Status.CompletionTime, 0)
	return nil
}

// DiscardEtcdSnapshot removes what a failed or canceled snapshot stored.
// A committed snapshot is never discarded.
func (a *Activities) DiscardEtcdSnapshot(ctx context.Context, spec v1alpha1.EtcdSnapshotSpec) error {
	loc, err := a.Locations.Open(ctx, spec.StorageLocation)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	keys := location.EtcdSnapshot(spec.Name)
	if _, err := loc.ReadAll(ctx, keys.Metadata()); err == nil {
		return nil
	} else if !errors.Is(err, location.ErrNotFound) {
		return err
	}
	a.Log.Info("Discarding the unverified etcd snapshot", zap.String("etcdSnapshot", spec.Name))
	return loc.DeletePrefix(ctx, keys.Prefix(), nil)
}
