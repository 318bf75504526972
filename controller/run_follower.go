package controller

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// runResource is a Backup or a Restore: a resource with one run.
type runResource interface {
	client.Object
	RunStatus() *v1alpha1.ResourceStatus
	NamespaceScopeProblems() []string
}

// runKind is how one kind of resource starts its run and reads its end.
type runKind struct {
	what string // "backup", "restore"
	// start starts the run of the resource, of name runName in cairn.
	start func(ctx context.Context, runName string) (*starter.CreateResult, error)
	// ended is the status of the ended run, or false while it runs.
	ended func(ctx context.Context, s v1alpha1.ResourceStatus) (v1alpha1.ResourceStatus, bool, error)
}

// runFollower starts a resource's run and brings its end into the
// resource's status.
type runFollower struct {
	kube    client.Client
	waiter  *runWaiter
	tenancy tenancy
	log     *zap.Logger
	now     func() time.Time
}

func (f *runFollower) follow(ctx context.Context, log *zap.Logger, obj runResource, kind runKind) error {
	status := obj.RunStatus()
	if status.WorkflowID == "" {
		id, refusal, err := f.tenancy.actingAs(ctx, obj)
		if err != nil {
			return err
		}
		if refusal != "" {
			log.Info("Refused", zap.String("reason", refusal))
			return f.writeStatus(ctx, obj, refused(*status, obj.GetGeneration(), refusal, f.now()))
		}
		return f.start(ctx, log, obj, kind, id)
	}
	if closed, _ := f.waiter.closedRun(obj, status.WorkflowID, ""); !closed {
		return nil
	}
	s, ended, err := kind.ended(ctx, *status)
	if err != nil {
		return fmt.Errorf("status of %s %s: %w", kind.what, obj.GetName(), err)
	}
	if !ended {
		_, _ = f.waiter.closedRun(obj, status.WorkflowID, "") // the wait ended early: wait again
		return nil
	}
	log.Info("Run ended", zap.String("phase", string(s.Phase)))
	return f.writeStatus(ctx, obj, s)
}

// start starts the resource's run (joining it when a crash came between
// the start and the status write: the same name and spec are the same
// run) and records it in the status.
func (f *runFollower) start(ctx context.Context, log *zap.Logger, obj runResource, kind runKind, id *v1alpha1.Identity) error {
	res, err := kind.start(f.tenancy.runContext(ctx, obj, id), f.tenancy.runName(obj))
	if refusedByStarter(err) {
		log.Info("Refused by the starter", zap.Error(err))
		return f.writeStatus(ctx, obj, refused(*obj.RunStatus(), obj.GetGeneration(), err.Error(), f.now()))
	}
	if err != nil {
		return fmt.Errorf("start %s %s: %w", kind.what, obj.GetName(), err)
	}
	log.Info("Run started", zap.String("workflowID", res.WorkflowID), zap.String("actingAs", id.Describe()))
	if err := f.writeStatus(ctx, obj, started(*obj.RunStatus(), obj.GetGeneration(), res, id, f.now())); err != nil {
		return err
	}
	_, _ = f.waiter.closedRun(obj, res.WorkflowID, "") // starts the wait; its end reconciles again
	return nil
}

func (f *runFollower) writeStatus(ctx context.Context, obj runResource, s v1alpha1.ResourceStatus) error {
	*obj.RunStatus() = s
	if err := f.kube.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
