package controller

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// restoreReconciler runs a Restore resource's restore. Deleting the
// resource leaves what the restore wrote, as deleting a Job leaves what
// its pods did.
type restoreReconciler struct {
	kube    client.Client
	runs    runs
	waiter  *runWaiter
	tenancy tenancy
	log     *zap.Logger
	now     func() time.Time
}

func (r *restoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &v1alpha1.Restore{}
	if err := r.kube.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rs.DeletionTimestamp.IsZero() || rs.Status.Phase.Done() {
		return ctrl.Result{}, nil
	}
	log := r.log.With(zap.String("restore", req.String()))
	id, refusal := r.tenancy.actingAs(rs)
	if refusal != "" {
		log.Info("Restore refused", zap.String("reason", refusal))
		return ctrl.Result{}, r.writeStatus(ctx, rs, refused(rs.Status, rs.Generation, refusal, r.now()))
	}
	if rs.Status.WorkflowID == "" {
		return ctrl.Result{}, r.start(ctx, log, rs, id)
	}
	if closed, _ := r.waiter.closedRun(rs, rs.Status.WorkflowID, ""); !closed {
		return ctrl.Result{}, nil
	}
	v, err := r.runs.GetRestore(ctx, rs.Name)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("status of restore %s: %w", rs.Name, err)
	}
	if !v.Phase.Done() {
		r.waiter.closedRun(rs, rs.Status.WorkflowID, "") // the wait ended early: wait again
		return ctrl.Result{}, nil
	}
	log.Info("Restore ended", zap.String("phase", string(v.Phase)))
	return ctrl.Result{}, r.writeStatus(ctx, rs, restoreEnded(rs.Status, v))
}

func (r *restoreReconciler) start(ctx context.Context, log *zap.Logger, rs *v1alpha1.Restore, id *v1alpha1.Identity) error {
	spec := rs.Spec
	spec.Name = rs.Name
	res, err := r.runs.CreateRestore(starter.WithActingAs(ctx, id), starter.CreateRestoreRequest{RestoreSpec: spec})
	if refusedByStarter(err) {
		log.Info("Restore refused", zap.Error(err))
		return r.writeStatus(ctx, rs, refused(rs.Status, rs.Generation, err.Error(), r.now()))
	}
	if err != nil {
		return fmt.Errorf("start restore %s: %w", rs.Name, err)
	}
	log.Info("Restore started", zap.String("workflowID", res.WorkflowID), zap.String("actingAs", id.Describe()))
	if err := r.writeStatus(ctx, rs, started(rs.Status, rs.Generation, res, id, r.now())); err != nil {
		return err
	}
	r.waiter.closedRun(rs, res.WorkflowID, "")
	return nil
}

func (r *restoreReconciler) writeStatus(ctx context.Context, rs *v1alpha1.Restore, s v1alpha1.ResourceStatus) error {
	rs.Status = s
	if err := r.kube.Status().Update(ctx, rs); err != nil {
		return fmt.Errorf("status of restore %s: %w", rs.Name, err)
	}
	return nil
}
