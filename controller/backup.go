package controller

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// backupReconciler runs a Backup resource's backup and, when the resource
// is deleted, deletes the backup's data.
type backupReconciler struct {
	runFollower
	runs runs
}

func (r *backupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Backup{}
	if err := r.kube.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := r.log.With(zap.String("backup", req.String()))
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteData(ctx, log, b)
	}
	if b.Status.Phase.Done() || followsTheList(b) {
		return ctrl.Result{}, nil // a mirrored backup with no run to follow: the mirror keeps it current
	}
	if !controllerutil.ContainsFinalizer(b, v1alpha1.FinalizerDeleteData) {
		if err := patchMetadata(ctx, r.kube, b, func() { controllerutil.AddFinalizer(b, v1alpha1.FinalizerDeleteData) }); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to backup %s: %w", req, err)
		}
	}
	return ctrl.Result{}, r.follow(ctx, log, b, runKind{
		what: "backup",
		start: func(ctx context.Context, runName string) (*starter.CreateResult, error) {
			req := starter.CreateBackupRequest{BackupSpec: b.Spec}
			req.Name = runName
			if r.tenancy.isTeams(b) {
				req.BackupSpec = b.ScopedToNamespace()
			}
			return r.runs.CreateBackup(ctx, req)
		},
		ended: func(ctx context.Context, s v1alpha1.ResourceStatus) (v1alpha1.ResourceStatus, bool, error) {
			v, err := r.runs.GetBackup(ctx, r.tenancy.runName(b))
			if err != nil || !v.Phase.Done() {
				return s, false, err
			}
			return backupOutcome(s, v), true, nil
		},
	})
}

// deleteData deletes the backup's data unless the resource keeps it, and
// releases the resource once the deletion has completed. The deletion's
// run is recorded in an annotation, so a restarted controller waits for
// the same run instead of starting another.
func (r *backupReconciler) deleteData(ctx context.Context, log *zap.Logger, b *v1alpha1.Backup) error {
	if !controllerutil.ContainsFinalizer(b, v1alpha1.FinalizerDeleteData) {
		return nil
	}
	if b.Annotations[v1alpha1.AnnotationKeepData] != "true" && hasData(b) {
		runID, deleting := b.Annotations[v1alpha1.AnnotationDeletionRun]
		if !deleting {
			return r.startDeletion(ctx, log, b)
		}
		closed, err := r.waiter.closedRun(b, v1alpha1.DeleteWorkflowID(r.tenancy.runName(b)), runID)
		if !closed {
			return nil
		}
		if err != nil {
			// The next attempt starts a new deletion.
			if uerr := patchMetadata(ctx, r.kube, b, func() { delete(b.Annotations, v1alpha1.AnnotationDeletionRun) }); uerr != nil {
				return fmt.Errorf("deletion of backup %s failed (%w), and: %w", b.Name, err, uerr)
			}
			return fmt.Errorf("deletion of backup %s: %w", b.Name, err)
		}
		log.Info("Backup data deleted", zap.String("runID", runID))
	}
	if err := patchMetadata(ctx, r.kube, b, func() { controllerutil.RemoveFinalizer(b, v1alpha1.FinalizerDeleteData) }); err != nil {
		return fmt.Errorf("release backup %s: %w", b.Name, err)
	}
	return nil
}

// backupOutcome is s with what v says of the backup's phase, items,
// failure and end.
func backupOutcome(s v1alpha1.ResourceStatus, v *starter.BackupView) v1alpha1.ResourceStatus {
	if st := v.Status; st != nil {
		return ended(s, v.Phase, runCounts{st.ItemsDone, st.Errors, st.Warnings}, st.FailureReason, st.CompletionTime, v.EndTime)
	}
	return ended(s, v.Phase, runCounts{}, "", nil, v.EndTime)
}

// hasData: the resource's backup has data to delete: a run was started
// for it, or it mirrors a backup (one found only in a location has no
// run) not known to be deleted already.
func hasData(b *v1alpha1.Backup) bool {
	return b.Status.WorkflowID != "" || (b.Annotations[v1alpha1.AnnotationMirrored] != "" && b.Status.Phase != v1alpha1.PhaseDeleted)
}

func (r *backupReconciler) startDeletion(ctx context.Context, log *zap.Logger, b *v1alpha1.Backup) error {
	res, err := r.runs.DeleteBackup(ctx, r.tenancy.runName(b), true)
	if errors.Is(err, starter.ErrNotFound) {
		log.Info("Backup has no data to delete")
		return patchMetadata(ctx, r.kube, b, func() { controllerutil.RemoveFinalizer(b, v1alpha1.FinalizerDeleteData) })
	}
	if err != nil {
		return fmt.Errorf("delete the data of backup %s: %w", b.Name, err)
	}
	log.Info("Deleting backup data", zap.String("workflowID", res.WorkflowID), zap.String("runID", res.RunID))
	record := func() {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[v1alpha1.AnnotationDeletionRun] = res.RunID
	}
	if err := patchMetadata(ctx, r.kube, b, record); err != nil {
		return fmt.Errorf("record the deletion of backup %s: %w", b.Name, err)
	}
	_, _ = r.waiter.closedRun(b, res.WorkflowID, res.RunID) // starts the wait; its end reconciles again
	return nil
}
