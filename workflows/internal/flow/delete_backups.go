package flow

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// expireConcurrency bounds the deletions one collection runs at once.
const expireConcurrency = 4

// DeleteBackups deletes the named backups of location, each through its
// own DeleteBackupWorkflow child, a few at a time. It returns the names
// deleted and, for the others, why not.
func DeleteBackups(ctx workflow.Context, kind string, names []string, location, why string) (deleted, failed []string) {
	deleted = []string{}
	sel := workflow.NewSelector(ctx)
	running := 0
	for _, name := range names {
		for running >= expireConcurrency {
			sel.Select(ctx)
			running--
		}
		// One deletion per backup at a time: one already running for it
		// (started by hand) is as good as this one.
		req := v1alpha1.DeleteBackupRequest{Backup: name, Location: location, Reason: why}
		id := v1alpha1.DeleteWorkflowID(name)
		if kind == v1alpha1.KindEtcdSnapshot {
			req.Kind, id = kind, v1alpha1.DeleteEtcdWorkflowID(name)
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: id})
		f := workflow.ExecuteChildWorkflow(cctx, v1alpha1.DeleteBackupWorkflowName, req)
		running++
		sel.AddFuture(f, func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
				failed = append(failed, name+": "+err.Error())
				return
			}
			deleted = append(deleted, name)
		})
	}
	for running > 0 {
		sel.Select(ctx)
		running--
	}
	return deleted, failed
}
