package etcdsnapshot

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// EtcdSnapshotWorkflow takes a snapshot of the etcd the worker is pointed
// at, through etcd's maintenance API: stream it into etcd/<name>/ of the
// location, read the stored copy back to verify it, and only then write
// snapshot.json, which marks it Completed. A stream cut by a dead worker
// starts over: an etcd snapshot cannot be resumed, and a retry is a fresh,
// consistent snapshot.
func EtcdSnapshotWorkflow(ctx workflow.Context, req v1alpha1.EtcdSnapshotRequest) (*v1alpha1.EtcdSnapshotStatus, error) {
	spec := req.Spec
	logger := log.With(workflow.GetLogger(ctx), "etcdSnapshot", spec.Name)
	status := &v1alpha1.EtcdSnapshotStatus{Name: spec.Name, Phase: v1alpha1.PhaseNew}
	if err := workflow.SetQueryHandler(ctx, v1alpha1.QueryStatus, func() (*v1alpha1.EtcdSnapshotStatus, error) { return status, nil }); err != nil {
		return nil, fmt.Errorf("register status query: %w", err)
	}
	start := workflow.Now(ctx).UTC()
	status.StartTime = &start
	if spec.TTL != nil {
		exp := start.Add(spec.TTL.Duration)
		status.Expiration = &exp
	}
	attrs := []temporal.SearchAttributeUpdate{v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindEtcdSnapshot), v1alpha1.SearchAttrName.ValueSet(spec.Name),
		v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseInProgress))}
	if spec.Schedule != "" {
		attrs = append(attrs, v1alpha1.SearchAttrSchedule.ValueSet(spec.Schedule))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	status.Phase = v1alpha1.PhaseInProgress

	err := takeEtcdSnapshot(ctx, spec, status)
	if err == nil {
		logger.Info("etcd snapshot completed", "bytes", status.Bytes, "revision", status.Revision, "sha256", status.SHA256)
		flow.PublishPhase(ctx, logger, v1alpha1.PhaseCompleted)
		return status, nil
	}

	// Whatever was stored is not a verified snapshot: remove it, even
	// when canceled.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, flow.ActivityOptions(10*time.Minute, workflows.HeartbeatTimeout(ctx)))
	if derr := workflow.ExecuteActivity(actx, etcdActs.DiscardEtcdSnapshot, spec).Get(dctx, nil); derr != nil {
		logger.Warn("Discarding the unverified snapshot failed", "error", derr)
	}
	now := workflow.Now(dctx).UTC()
	status.CompletionTime = &now
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		status.Phase, status.FailureReason = v1alpha1.PhaseCanceled, "canceled by request"
		flow.PublishPhase(dctx, logger, v1alpha1.PhaseCanceled)
		return status, temporal.NewCanceledError("etcd snapshot canceled")
	}
	status.Phase, status.FailureReason = v1alpha1.PhaseFailed, flow.Reason(err)
	flow.PublishPhase(dctx, logger, v1alpha1.PhaseFailed)
	logger.Error("etcd snapshot failed", "error", err)
	return status, err
}

// takeEtcdSnapshot streams, verifies and commits; status follows along.
func takeEtcdSnapshot(ctx workflow.Context, spec v1alpha1.EtcdSnapshotSpec, status *v1alpha1.EtcdSnapshotStatus) error {
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(time.Hour, workflows.HeartbeatTimeout(ctx)))
	var taken v1alpha1.TakeEtcdSnapshotResult
	if err := workflow.ExecuteActivity(actx, etcdActs.TakeEtcdSnapshot, spec).Get(ctx, &taken); err != nil {
		return fmt.Errorf("take etcd snapshot: %w", err)
	}
	status.Endpoint, status.EtcdVersion, status.Revision = taken.Endpoint, taken.EtcdVersion, taken.Revision
	status.Bytes, status.SHA256 = taken.Bytes, taken.SHA256

	verify := v1alpha1.VerifyEtcdSnapshotInput{Spec: spec, Bytes: taken.Bytes, SHA256: taken.SHA256}
	if err := workflow.ExecuteActivity(actx, etcdActs.VerifyEtcdSnapshot, verify).Get(ctx, nil); err != nil {
		return fmt.Errorf("verify stored etcd snapshot: %w", err)
	}
	status.Verified = true

	final := *status
	final.Phase = v1alpha1.PhaseCompleted
	now := workflow.Now(ctx).UTC()
	final.CompletionTime = &now
	if err := workflow.ExecuteActivity(actx, etcdActs.CommitEtcdSnapshot, v1alpha1.CommitEtcdSnapshotInput{Spec: spec, Status: final}).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit etcd snapshot: %w", err)
	}
	*status = final
	return nil
}
