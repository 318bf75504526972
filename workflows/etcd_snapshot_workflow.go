package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// EtcdSnapshotWorkflow takes a snapshot of the etcd the worker is pointed
// at, through etcd's maintenance API: stream it into etcd/<name>/ of the
// location, read the stored copy back to verify it, and only then write
// snapshot.json, which marks it Completed. A stream cut by a dead worker
// starts over: an etcd snapshot cannot be resumed, and a retry is a fresh,
// consistent snapshot.
func EtcdSnapshotWorkflow(ctx workflow.Context, req EtcdSnapshotRequest) (*EtcdSnapshotStatus, error) {
	spec := req.Spec
	logger := log.With(workflow.GetLogger(ctx), "etcdSnapshot", spec.Name)
	status := &EtcdSnapshotStatus{Name: spec.Name, Phase: PhaseNew}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*EtcdSnapshotStatus, error) { return status, nil }); err != nil {
		return nil, fmt.Errorf("register status query: %w", err)
	}
	start := workflow.Now(ctx).UTC()
	status.StartTime = &start
	if spec.TTL != nil {
		exp := start.Add(spec.TTL.Duration)
		status.Expiration = &exp
	}
	attrs := []temporal.SearchAttributeUpdate{SearchAttrKind.ValueSet(KindEtcdSnapshot), SearchAttrName.ValueSet(spec.Name),
		SearchAttrPhase.ValueSet(string(PhaseInProgress))}
	if spec.Schedule != "" {
		attrs = append(attrs, SearchAttrSchedule.ValueSet(spec.Schedule))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	status.Phase = PhaseInProgress

	err := takeEtcdSnapshot(ctx, spec, status)
	if err == nil {
		logger.Info("etcd snapshot completed", "bytes", status.Bytes, "revision", status.Revision, "sha256", status.SHA256)
		publishPhase(ctx, logger, PhaseCompleted)
		return status, nil
	}

	// Whatever was stored is not a verified snapshot: remove it, even
	// when canceled.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, activityOptions(10*time.Minute, defaultHeartbeatTimeout))
	if derr := workflow.ExecuteActivity(actx, DiscardEtcdSnapshotActivity, spec).Get(dctx, nil); derr != nil {
		logger.Warn("Discarding the unverified snapshot failed", "error", derr)
	}
	now := workflow.Now(dctx).UTC()
	status.CompletionTime = &now
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		status.Phase, status.FailureReason = PhaseCanceled, "canceled by request"
		publishPhase(dctx, logger, PhaseCanceled)
		return status, temporal.NewCanceledError("etcd snapshot canceled")
	}
	status.Phase, status.FailureReason = PhaseFailed, reason(err)
	publishPhase(dctx, logger, PhaseFailed)
	logger.Error("etcd snapshot failed", "error", err)
	return status, err
}

// takeEtcdSnapshot streams, verifies and commits; status follows along.
func takeEtcdSnapshot(ctx workflow.Context, spec EtcdSnapshotSpec, status *EtcdSnapshotStatus) error {
	actx := workflow.WithActivityOptions(ctx, activityOptions(time.Hour, defaultHeartbeatTimeout))
	var taken TakeEtcdSnapshotResult
	if err := workflow.ExecuteActivity(actx, TakeEtcdSnapshotActivity, spec).Get(ctx, &taken); err != nil {
		return fmt.Errorf("take etcd snapshot: %w", err)
	}
	status.Endpoint, status.EtcdVersion, status.Revision = taken.Endpoint, taken.EtcdVersion, taken.Revision
	status.Bytes, status.SHA256 = taken.Bytes, taken.SHA256

	verify := VerifyEtcdSnapshotInput{Spec: spec, Bytes: taken.Bytes, SHA256: taken.SHA256}
	if err := workflow.ExecuteActivity(actx, VerifyEtcdSnapshotActivity, verify).Get(ctx, nil); err != nil {
		return fmt.Errorf("verify stored etcd snapshot: %w", err)
	}
	status.Verified = true

	final := *status
	final.Phase = PhaseCompleted
	now := workflow.Now(ctx).UTC()
	final.CompletionTime = &now
	if err := workflow.ExecuteActivity(actx, CommitEtcdSnapshotActivity, CommitEtcdSnapshotInput{Spec: spec, Status: final}).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit etcd snapshot: %w", err)
	}
	*status = final
	return nil
}
