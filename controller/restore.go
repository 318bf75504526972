package controller

import (
	"context"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
	log := r.log.With(zap.String("restore", req.String()))
	if rs.Status.WorkflowID == "" {
		if waiting, err := r.waitForBackup(ctx, log, rs); waiting || err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.follow(ctx, log, rs, runKind{
		what: "restore",
		start: func(ctx context.Context, runName string) (*starter.CreateResult, error) {
			req := starter.CreateRestoreRequest{RestoreSpec: rs.Spec}
			req.Name = runName
			if r.tenancy.isTeams(rs) {
				req.RestoreSpec = rs.ScopedToNamespace()
			}
			return r.runs.CreateRestore(ctx, req)
		},
		ended: func(ctx context.Context, s v1alpha1.ResourceStatus) (v1alpha1.ResourceStatus, bool, error) {
			v, err := r.runs.GetRestore(ctx, r.tenancy.runName(rs))
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

// restoreBackupIndex indexes Restores by the backup they restore, so a
// Backup that ends wakes the Restores applied together with it.
const restoreBackupIndex = "spec.backupName"

// waitForBackup reports whether the Restore waits for a Backup resource of
// its namespace whose run has not ended: a Backup and its Restore applied
// together (a GitOps sync) restore once the backup is done, instead of
// failing because it is still running. The Backup's end wakes it.
func (r *restoreReconciler) waitForBackup(ctx context.Context, log *zap.Logger, rs *v1alpha1.Restore) (bool, error) {
	if rs.Spec.BackupName == "" {
		return false, nil
	}
	b := &v1alpha1.Backup{}
	err := r.kube.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.BackupName}, b)
	if apierrors.IsNotFound(err) {
		return false, nil // a backup of the API, the CLI or the location: the starter decides
	}
	if err != nil || b.Status.Phase.Done() {
		return false, err
	}
	waiting := rs.Status
	waiting.Phase, waiting.Message = v1alpha1.PhaseNew, "waiting for backup "+b.Name+" to end"
	if waiting != rs.Status {
		log.Info("Waiting for its backup", zap.String("backup", b.Name))
		return true, r.writeStatus(ctx, rs, waiting)
	}
	return true, nil
}

// restoresOf maps a Backup to the Restores of its namespace that restore it.
func restoresOf(kube client.Client) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.RestoreList
		if err := kube.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{restoreBackupIndex: obj.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, rs := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
		}
		return reqs
	}
}
