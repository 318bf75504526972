package controller

import (
	"context"

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
	runFollower
	runs runs
}

func (r *restoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &v1alpha1.Restore{}
	if err := r.kube.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rs.DeletionTimestamp.IsZero() || rs.Status.Phase.Done() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.follow(ctx, r.log.With(zap.String("restore", req.String())), rs, runKind{
		what: "restore",
		start: func(ctx context.Context) (*starter.CreateResult, error) {
			spec := rs.Spec
			spec.Name = rs.Name
			return r.runs.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: spec})
		},
		ended: func(ctx context.Context, s v1alpha1.ResourceStatus) (v1alpha1.ResourceStatus, bool, error) {
			v, err := r.runs.GetRestore(ctx, rs.Name)
			if err != nil || !v.Phase.Done() {
				return s, false, err
			}
			if st := v.Status; st != nil {
				return ended(s, v.Phase, runCounts{st.ItemsRestored, st.ItemsFailed, st.Warnings}, st.FailureReason, st.CompletionTime, v.EndTime), true, nil
			}
			return ended(s, v.Phase, runCounts{}, "", nil, v.EndTime), true, nil
		},
	})
}
